package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// serveWS upgrades GET /v1/ws to a WebSocket carrying the gateway's JSON-RPC
// (one JSON-RPC message per text frame). The token was checked on the
// upgrade request, by the same middleware as every other path, and only
// there: the connection keeps the scopes it had then. The Origin rule was
// applied by that middleware too, so the library's own same-host check is
// switched off here rather than applied a second, different way.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	p, ok := s.auth.check(bearer(r))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentloop"`)
		writeError(w, errorf(CodeUnauthorized, "a valid bearer token is required on the upgrade request (Authorization: Bearer <token>)"))
		return
	}
	if !p.can(ScopeRead) {
		writeError(w, errorf(CodeForbidden, "this token lacks the read scope"))
		return
	}
	if s.stopping() {
		writeError(w, errorf(CodeUnavailable, "the server is shutting down"))
		return
	}
	if e := s.acquireStream(); e != nil {
		writeError(w, e)
		return
	}
	defer s.openStreams.Add(-1)
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the request
	}
	s.streams.Add(1)
	defer s.streams.Done()
	conn.SetReadLimit(s.cfg.MaxBody)
	t := &wsTransport{c: conn}
	c := newRPCConn(s, p.Scopes, t)
	// The connection lives until the client goes or Shutdown (serve
	// watches s.stop); the request's context is not the connection's.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		t.keepalive(ctx, s.cfg.Heartbeat, c.end)
	}()
	err = c.serve(ctx)
	cancel()
	<-pingDone
	t.finish(err)
}

// errNoPong ends a connection that did not answer a ping in time.
var errNoPong = errors.New("no pong")

type wsTransport struct {
	c    *websocket.Conn
	once sync.Once
}

func (t *wsTransport) read(ctx context.Context) ([]byte, error) {
	for {
		typ, b, err := t.c.Read(ctx)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				return nil, cause
			}
			return nil, err
		}
		if typ == websocket.MessageText || typ == websocket.MessageBinary {
			return b, nil
		}
	}
}

func (t *wsTransport) write(ctx context.Context, b []byte) error {
	return t.c.Write(ctx, websocket.MessageText, b)
}

// abort closes the WebSocket with the status that says why: 1008 "slow
// consumer" for a client whose queue filled, 1001 when the server goes away.
func (t *wsTransport) abort(cause error) {
	t.once.Do(func() {
		switch {
		case errors.Is(cause, errSlowConsumer):
			t.c.Close(websocket.StatusPolicyViolation, "slow consumer")
		case errors.Is(cause, errNoPong):
			t.c.Close(websocket.StatusPolicyViolation, "no pong")
		case errors.Is(cause, errShutdown):
			t.c.Close(websocket.StatusGoingAway, "server shutting down")
		default:
			t.c.CloseNow()
		}
	})
}

// finish closes a connection that ended without abort (the client went
// away, or closed first).
func (t *wsTransport) finish(err error) {
	t.once.Do(func() {
		if websocket.CloseStatus(err) != -1 {
			t.c.Close(websocket.StatusNormalClosure, "")
			return
		}
		t.c.CloseNow()
	})
}

// keepalive pings every interval; the pong must come before the next tick
// (so at most two intervals, 30 s by default, pass without hearing from a
// live client), or the connection is ended.
func (t *wsTransport) keepalive(ctx context.Context, every time.Duration, fail func(error)) {
	if every <= 0 {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := t.c.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				fail(errNoPong)
			}
			return
		}
	}
}
