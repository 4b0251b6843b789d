package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// The JSON-RPC 2.0 face of the gateway, shared by GET /v1/ws and
// ServeStdio: one rpcConn per client, whatever carries its frames. Requests
// call the same *Server methods the REST handlers call; events come from the
// same subscriptions SSE reads (bounded the same way: a client whose queue
// fills is cut and resumes by seq), and go out as "event" notifications
// whose params are the SSE data object, byte for byte.

// JSON-RPC error codes: the standard ones, -32001 for an overloaded server
// (codex app-server's code for it), and one per kind of API error; the
// error's data is the REST error object, so a client needs one table.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
	rpcOverloaded     = -32001
	rpcUnauthorized   = -32002
	rpcForbidden      = -32003
	rpcNotFound       = -32004
	rpcConflict       = -32009
	rpcQueueFull      = -32029
	rpcUnavailable    = -32050
)

// maxRPCSubscriptions bounds the subscriptions of one connection: each
// holds a client queue.
const maxRPCSubscriptions = 64

// rpcMessage is any JSON-RPC frame: a request (method and id), a
// notification (method, no id) or a response (id, result or error).
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// rpcErrorOf turns an API error into a JSON-RPC error whose data is the
// REST error object.
func rpcErrorOf(e *Error) *rpcError {
	if e == nil {
		return nil
	}
	code := rpcInternalError
	switch e.Code {
	case CodeInvalidRequest, CodeTooLarge:
		code = rpcInvalidParams
	case CodeOverloaded:
		code = rpcOverloaded
	case CodeUnauthorized:
		code = rpcUnauthorized
	case CodeForbidden:
		code = rpcForbidden
	case CodeNotFound:
		code = rpcNotFound
	case CodeSessionBusy, CodeRunNotActive, CodeAlreadyResolved, CodeResyncRequired:
		code = rpcConflict
	case CodeQueueFull:
		code = rpcQueueFull
	case CodeUnavailable:
		code = rpcUnavailable
	}
	var body wireError
	body.Error.Code, body.Error.Message, body.Error.Retryable, body.Error.Details = e.Code, e.Message, e.Retryable, e.Details
	body.Error.RetryAfterMs = e.RetryAfter.Milliseconds()
	return &rpcError{Code: code, Message: e.Message, Data: body.Error}
}

// rpcTransport carries whole frames: a WebSocket message, a line of stdio.
// Writes are never concurrent (rpcConn serialises them). abort ends the
// transport for cause (a slow consumer, a shutdown, a lost peer), so that
// a write the peer is not reading returns.
type rpcTransport interface {
	read(ctx context.Context) ([]byte, error)
	write(ctx context.Context, b []byte) error
	abort(cause error)
}

// Why a connection ends, besides its transport's own errors.
var (
	errSlowConsumer = errors.New("slow consumer")
	errShutdown     = errors.New("the server is shutting down")
)

// rpcConn is one JSON-RPC client.
type rpcConn struct {
	s      *Server
	scopes Scope
	tr     rpcTransport

	ctx    context.Context
	cancel context.CancelCauseFunc
	hwg    sync.WaitGroup // request handlers
	pwg    sync.WaitGroup // subscription pumps
	fail   sync.Once

	wmu sync.Mutex // one frame at a time on the transport

	mu     sync.Mutex
	subs   map[string]*rpcSub // by subscription id
	nsub   int
	nextID int64            // ids of the requests we send (approval/request)
	asked  map[string]int64 // approvalId → id of our approval/request, while open
	askedR map[int64]string // the same, by request id
	optOut map[string]bool  // event types the client asked not to get
	client map[string]any   // initialize's client {name, version}
}

// rpcSub is one events/subscribe of a connection.
type rpcSub struct {
	id    string
	sub   *subscription
	runID string // a run's stream ends after its run_end
}

func newRPCConn(s *Server, scopes Scope, tr rpcTransport) *rpcConn {
	return &rpcConn{s: s, scopes: scopes, tr: tr, subs: map[string]*rpcSub{},
		asked: map[string]int64{}, askedR: map[int64]string{}, optOut: map[string]bool{}}
}

// serve reads requests until the transport ends, ctx ends, the server
// shuts down or the client falls behind; it returns once every goroutine it
// started is done, with the reason it ended.
func (c *rpcConn) serve(ctx context.Context) error {
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	defer c.cancel(nil)
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-c.s.stop:
			c.end(errShutdown)
		case <-ctx.Done():
			c.end(context.Cause(ctx))
		case <-stopWatch:
		}
	}()

	var err error
	for {
		b, rerr := c.tr.read(c.ctx)
		if rerr != nil {
			err = rerr
			break
		}
		c.handleFrame(b)
	}
	if c.ctx.Err() == nil {
		// The client went away: answers being worked on may still go
		// out; then the subscriptions end.
		c.hwg.Wait()
	}
	c.cancel(err)
	c.hwg.Wait()
	c.closeSubs()
	c.pwg.Wait()
	close(stopWatch)
	<-watchDone
	if cause := context.Cause(c.ctx); cause != nil && !errors.Is(cause, err) && (errors.Is(cause, errSlowConsumer) || errors.Is(cause, errShutdown) || errors.Is(cause, errNoPong)) {
		return cause
	}
	return err
}

// end stops the connection for cause, once: the transport is aborted
// first (so a WebSocket can still say why in its close frame), then every
// wait of the connection ends.
func (c *rpcConn) end(cause error) {
	c.fail.Do(func() {
		c.tr.abort(cause)
		c.cancel(cause)
	})
}

// write sends one frame.
func (c *rpcConn) write(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	if err := c.tr.write(c.ctx, b); err != nil {
		c.end(err)
	}
}

func (c *rpcConn) handleFrame(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	if b[0] == '[' {
		c.reply(nil, nil, &rpcError{Code: rpcInvalidRequest, Message: "batches are not supported: send one request per frame"})
		return
	}
	var m rpcMessage
	if err := json.Unmarshal(b, &m); err != nil {
		c.reply(nil, nil, &rpcError{Code: rpcParseError, Message: "parse error: " + err.Error()})
		return
	}
	isNotification := len(m.ID) == 0 || string(m.ID) == "null"
	switch {
	case m.Method == "" && !isNotification:
		c.onResponse(m)
		return
	case m.Method == "":
		c.reply(nil, nil, &rpcError{Code: rpcInvalidRequest, Message: "a request needs a method"})
		return
	}
	h, ok := rpcMethods[m.Method]
	if !ok {
		if !isNotification {
			c.reply(m.ID, nil, &rpcError{Code: rpcMethodNotFound, Message: "no method " + strconv.Quote(m.Method)})
		}
		return
	}
	if h.scope != 0 && c.scopes&h.scope != h.scope {
		if !isNotification {
			c.reply(m.ID, nil, rpcErrorOf(errorf(CodeForbidden, "this token lacks the %s scope", h.scope)))
		}
		return
	}
	// The cap on requests in flight is the REST one: a request over it is
	// answered at once with -32001.
	select {
	case c.s.inflight <- struct{}{}:
	default:
		if !isNotification {
			e := errorf(CodeOverloaded, "Server overloaded; retry later.")
			e.RetryAfter = time.Second
			c.reply(m.ID, nil, rpcErrorOf(e))
		}
		return
	}
	c.hwg.Add(1)
	go func() {
		defer c.hwg.Done()
		res, e := h.fn(c.ctx, c, m.Params)
		<-c.s.inflight
		if isNotification {
			if t, ok := res.(rpcThen); ok && t.then != nil {
				t.then()
			}
			return
		}
		if e != nil {
			c.reply(m.ID, nil, rpcErrorOf(e))
			return
		}
		if t, ok := res.(rpcThen); ok {
			c.reply(m.ID, t.result, nil)
			if t.then != nil {
				t.then()
			}
			return
		}
		c.reply(m.ID, res, nil)
	}()
}

// rpcThen is a result with something to do once it has been sent (a
// subscription's pump starts after its answer, so the replay follows it).
type rpcThen struct {
	result any
	then   func()
}

// reply sends a response.
func (c *rpcConn) reply(id json.RawMessage, result any, rerr *rpcError) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	if rerr != nil {
		buf.WriteString(`,"error":`)
		appendJSON(&buf, rerr)
	} else {
		buf.WriteString(`,"result":`)
		appendJSON(&buf, result)
	}
	buf.WriteByte('}')
	c.write(buf.Bytes())
}

// notify sends a notification; params go out as they are.
func (c *rpcConn) notify(method string, params []byte) {
	b := make([]byte, 0, len(params)+len(method)+40)
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = strconv.AppendQuote(b, method)
	b = append(b, `,"params":`...)
	b = append(b, params...)
	b = append(b, '}')
	c.write(b)
}

// request sends a server→client request with id.
func (c *rpcConn) request(id int64, method string, params any) {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.WriteString(strconv.FormatInt(id, 10))
	buf.WriteString(`,"method":`)
	appendJSON(&buf, method)
	buf.WriteString(`,"params":`)
	appendJSON(&buf, params)
	buf.WriteByte('}')
	c.write(buf.Bytes())
}

// appendJSON encodes v the way every JSON of the gateway is encoded
// (llm.MarshalJSON: no HTML escaping, no newline, so a frame of stdio is
// one line).
func appendJSON(buf *bytes.Buffer, v any) {
	if raw, ok := v.(json.RawMessage); ok {
		buf.Write(raw)
		return
	}
	b, err := llm.MarshalJSON(v)
	if err != nil {
		buf.WriteString(`null`)
		return
	}
	buf.Write(b)
}
