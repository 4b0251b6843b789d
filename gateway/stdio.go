package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
)

// ServeStdio speaks the gateway's JSON-RPC (the same methods and
// notifications as GET /v1/ws) over r and w, one JSON object per line, for
// a parent process that started agentloop serve --stdio. The process
// boundary is the authentication: the client has every scope.
//
// It returns nil when r ends (after the answers to the requests already
// read have been written), ctx's cause when ctx ends, and an error when the
// server shuts down or the parent stops reading until its queue fills
// ("slow consumer": what it missed is resumable by seq). When w is an
// io.Closer it is closed in those last cases, so a write the parent is not
// reading returns. A read blocked in r ends only with r: the caller closes
// it (agentloop serve --stdio exits, which does).
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	if s.stopping() {
		return errShutdown
	}
	s.streams.Add(1)
	defer s.streams.Done()
	t := &stdioTransport{w: bufio.NewWriter(w), raw: w, lines: make(chan []byte), errc: make(chan error, 1), quit: make(chan struct{})}
	go t.readLines(r)
	err := newRPCConn(s, ScopeAll, t).serve(ctx)
	close(t.quit)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// stdioTransport reads lines on its own goroutine, so a read can be left
// when the connection ends.
type stdioTransport struct {
	w     *bufio.Writer
	raw   io.Writer
	once  sync.Once
	lines chan []byte
	errc  chan error
	quit  chan struct{}
}

func (t *stdioTransport) readLines(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), DefaultMaxBody)
	for sc.Scan() {
		b := append([]byte(nil), sc.Bytes()...)
		select {
		case t.lines <- b:
		case <-t.quit:
			return
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	select {
	case t.errc <- err:
	case <-t.quit:
	}
}

func (t *stdioTransport) read(ctx context.Context) ([]byte, error) {
	select {
	case b := <-t.lines:
		return b, nil
	case err := <-t.errc:
		return nil, err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (t *stdioTransport) write(_ context.Context, b []byte) error {
	t.w.Write(b)
	t.w.WriteByte('\n')
	return t.w.Flush()
}

// abort closes the output when it can be closed: a parent that stopped
// reading would otherwise hold a write for ever.
func (t *stdioTransport) abort(error) {
	t.once.Do(func() {
		if c, ok := t.raw.(io.Closer); ok {
			c.Close()
		}
	})
}
