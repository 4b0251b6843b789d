package wiretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Result is what one Stream produced.
type Result struct {
	Types []llm.EventType
	// Args holds the Partial arguments at each toolcall_delta, Deltas the
	// fragments.
	Args   []string
	Deltas []string
	Msg    *llm.Message
	Err    error // the bare error before start, or the error event's Err
	Bare   bool  // Err came before any event
}

// Collect runs one Stream to its end. It fails the test on a bare error
// after events, or on partial arguments that are not valid JSON.
func Collect(t testing.TB, m llm.Model, ctx context.Context, req *llm.Request) Result {
	t.Helper()
	var r Result
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			if len(r.Types) != 0 {
				t.Fatalf("bare error after %d events: %v", len(r.Types), err)
			}
			r.Err, r.Bare = err, true
			continue
		}
		r.Types = append(r.Types, ev.Type)
		switch ev.Type {
		case llm.EventToolCallDelta:
			a := ev.Partial.Content[ev.ContentIndex].Arguments
			if !json.Valid(a) {
				t.Fatalf("toolcall_delta: partial arguments %q are not valid JSON", a)
			}
			r.Args = append(r.Args, string(a))
			r.Deltas = append(r.Deltas, ev.Delta)
		case llm.EventDone:
			r.Msg = ev.Message
		case llm.EventError:
			r.Msg, r.Err = ev.Message, ev.Err
		}
	}
	return r
}

// Types joins event types with spaces, for comparing sequences.
func Types(ts []llm.EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, " ")
}

// Capture records the last request a server received.
type Capture struct {
	Header http.Header
	Body   []byte
	Path   string
	Query  string // the raw query, without the '?'
}

// Serve answers every request with status, headers (Content-Type
// text/event-stream unless given) and body, recording the request in c
// when c is not nil. The server closes when the test ends.
func Serve(t testing.TB, status int, header map[string]string, body string, c *Capture) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c != nil {
			c.Header = r.Header.Clone()
			c.Body, _ = io.ReadAll(r.Body)
			c.Path = r.URL.Path
			c.Query = r.URL.RawQuery
		}
		if _, ok := header["Content-Type"]; !ok {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// pipeTransport answers with a body that serve writes, in memory, so the
// stream can run inside a synctest bubble on fake time. Cancelling the
// request closes the body, as net/http does. headers false holds the
// response back until the request is cancelled.
type pipeTransport struct {
	headers bool
	serve   func(w io.Writer, done <-chan struct{})
}

func (p pipeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !p.headers {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	pr, pw := io.Pipe()
	go func() {
		<-req.Context().Done()
		pw.CloseWithError(req.Context().Err())
	}()
	go func() {
		p.serve(pw, req.Context().Done())
		pw.Close()
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
}

// IdleTimeout checks, on fake time, that a wire gives up after idle (its
// default idle timeout) on a stream that sends first and then only
// keep-alives, however many: they do not reset the timer. It checks the
// same of a server that never sends its response headers. newModel makes
// the wire's model with the given client and no idle timeout set.
func IdleTimeout(t *testing.T, newModel func(*http.Client) llm.Model, idle time.Duration, first, keepAlive string) {
	tests := []struct {
		name    string
		headers bool
		bare    bool
	}{
		{"keep-alives after the start", true, false},
		{"no response headers", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := pipeTransport{headers: tt.headers, serve: func(w io.Writer, done <-chan struct{}) {
					if _, err := io.WriteString(w, first); err != nil {
						return
					}
					tick := time.NewTicker(10 * time.Second)
					defer tick.Stop()
					for {
						select {
						case <-done:
							return
						case <-tick.C:
							if _, err := io.WriteString(w, keepAlive); err != nil {
								return
							}
						}
					}
				}}
				m := newModel(&http.Client{Transport: tr})
				start := time.Now()
				r := Collect(t, m, context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}})
				if took := time.Since(start); took != idle {
					t.Errorf("gave up after %v, want %v", took, idle)
				}
				var pe *llm.ProviderError
				if r.Bare != tt.bare || !errors.As(r.Err, &pe) || pe.Reason != llm.ReasonTimeout {
					t.Fatalf("bare %v err %v", r.Bare, r.Err)
				}
				if !tt.bare && r.Msg.StopReason != llm.StopReasonError {
					t.Errorf("stop %q", r.Msg.StopReason)
				}
			})
		})
	}
}

// ConnectionReuse checks that a finished stream hands its connection back:
// three consecutive calls share one. The server answers body, flushing
// before its end so the end comes in a later packet, as it does from a
// real server that flushes each event.
func ConnectionReuse(t *testing.T, newModel func(*httptest.Server) llm.Model, body string) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
		w.(http.Flusher).Flush()
		time.Sleep(time.Millisecond)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	m := newModel(srv)
	for i := 0; i < 3; i++ {
		if r := Collect(t, m, context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("3 calls used %d connections", n)
	}
}

// Replay is a transport that answers every request with the same event
// stream, in memory, so benchmarks and fuzz targets measure decoding, not
// TCP.
type Replay string

// RoundTrip implements http.RoundTripper.
func (r Replay) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(string(r))), Request: req}, nil
}

// CheckStream runs one Stream of m and holds it to the event contract,
// whatever the server sent: one bare error, or start first and exactly one
// terminal event last, carrying the message (and the error); every block
// event refers to a block that was started and not yet ended, and each
// block ends at most once; partial and final tool arguments are valid
// JSON.
func CheckStream(t testing.TB, m llm.Model) {
	t.Helper()
	n, terminal := 0, 0
	open := map[int]bool{} // content index → started and not ended
	for ev, err := range m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}) {
		n++
		if err != nil {
			if n != 1 {
				t.Fatalf("bare error after %d events", n-1)
			}
			continue
		}
		if n == 1 && ev.Type != llm.EventStart {
			t.Fatalf("first event %s", ev.Type)
		}
		if terminal > 0 {
			t.Fatalf("event %s after the terminal event", ev.Type)
		}
		switch ev.Type {
		case llm.EventTextStart, llm.EventThinkingStart, llm.EventToolCallStart:
			if _, seen := open[ev.ContentIndex]; seen {
				t.Fatalf("%s for block %d, which was started before", ev.Type, ev.ContentIndex)
			}
			open[ev.ContentIndex] = true
		case llm.EventTextDelta, llm.EventThinkingDelta, llm.EventToolCallDelta:
			if !open[ev.ContentIndex] {
				t.Fatalf("%s for block %d, which is not open", ev.Type, ev.ContentIndex)
			}
		case llm.EventTextEnd, llm.EventThinkingEnd, llm.EventToolCallEnd:
			if !open[ev.ContentIndex] {
				t.Fatalf("%s for block %d, which is not open", ev.Type, ev.ContentIndex)
			}
			open[ev.ContentIndex] = false
			if ev.Block == nil {
				t.Fatalf("%s without its block", ev.Type)
			}
			if ev.Type == llm.EventToolCallEnd && !json.Valid(ev.Block.Arguments) {
				t.Fatalf("toolcall_end arguments %q", ev.Block.Arguments)
			}
		}
		if ev.Type.Terminal() {
			terminal++
			if ev.Message == nil || (ev.Type == llm.EventError && ev.Err == nil) {
				t.Fatalf("terminal event without message or error: %+v", ev)
			}
			for _, c := range ev.Message.ToolCalls() {
				if !json.Valid(c.Arguments) {
					t.Fatalf("final arguments %q", c.Arguments)
				}
			}
		}
		if ev.Type == llm.EventToolCallDelta && !json.Valid(ev.Partial.Content[ev.ContentIndex].Arguments) {
			t.Fatalf("partial arguments %q", ev.Partial.Content[ev.ContentIndex].Arguments)
		}
	}
	if n > 1 && terminal != 1 {
		t.Fatalf("%d events, %d terminal", n, terminal)
	}
}

// HTTPError is what a call refused with an HTTP error must report.
type HTTPError struct {
	Status int
	// Reasons are the acceptable reasons; nil means what llm.Classify
	// says of Status and Body (the wire hands the response to the
	// classifier as it is), or, for a 200 with a body that is not a
	// stream, any known reason.
	Reasons []llm.Reason
	Body    string
	Words   string        // the error quotes them
	Retry   time.Duration // the RetryAfter it carries
	Key     string        // the API key, which it must not contain
}

// CheckHTTPError checks the result of a call the server refused: one bare
// *llm.ProviderError with the status, a known reason, the provider's
// words and retry hint, and no key.
func CheckHTTPError(t testing.TB, r Result, want HTTPError) {
	t.Helper()
	if !r.Bare {
		t.Fatalf("want one bare error, got events %s", Types(r.Types))
	}
	var pe *llm.ProviderError
	if !errors.As(r.Err, &pe) {
		t.Fatalf("error %T %v is not a *llm.ProviderError", r.Err, r.Err)
	}
	if pe.Status != want.Status {
		t.Errorf("status %d, want %d", pe.Status, want.Status)
	}
	reasons := want.Reasons
	if reasons == nil && want.Status != 200 {
		reasons = []llm.Reason{llm.Classify(want.Status, want.Body)}
	}
	if reasons != nil && !slices.Contains(reasons, pe.Reason) {
		t.Errorf("reason %q, want one of %v", pe.Reason, reasons)
	}
	if pe.Reason == llm.ReasonUnknown {
		t.Errorf("reason unknown")
	}
	if !strings.Contains(pe.Error(), want.Words) {
		t.Errorf("error %q does not quote %q", pe.Error(), want.Words)
	}
	if pe.RetryAfter != want.Retry {
		t.Errorf("retry after %v, want %v", pe.RetryAfter, want.Retry)
	}
	if want.Key != "" && strings.Contains(fmt.Sprintf("%v %+v", pe, *pe), want.Key) {
		t.Errorf("the API key leaked into the error")
	}
}

// hold serves head, then holds the body open until the client goes away;
// done is closed when the handler has seen it go.
func hold(head string) (*httptest.Server, <-chan struct{}) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client going away
		defer close(done)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, head)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the body never ends on its own
	}))
	return srv, done
}

// AbortKeepsPartial checks that cancelling the context mid-stream ends it
// with an error event (stop reason aborted, an error that is
// context.Canceled) carrying the text so far, and closes the connection.
// head is the start of a reply whose text is text, in one text delta.
func AbortKeepsPartial(t *testing.T, newModel func(*httptest.Server) llm.Model, head, text string) {
	srv, handlerDone := hold(head)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last llm.Event
	for ev, err := range newModel(srv).Stream(ctx, &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == llm.EventTextDelta {
			cancel()
		}
		last = ev
	}
	if last.Type != llm.EventError || last.Message.StopReason != llm.StopReasonAborted {
		t.Fatalf("last event %s stop %q", last.Type, last.Message.StopReason)
	}
	if !errors.Is(last.Err, context.Canceled) {
		t.Fatalf("err %v does not wrap context.Canceled", last.Err)
	}
	if last.Message.Text() != text {
		t.Fatalf("partial text %q, want %q", last.Message.Text(), text)
	}
	<-handlerDone // the server saw the connection go
}

// ConsumerBreak checks that a consumer breaking out after the start event
// closes the connection. head is the start of a reply.
func ConsumerBreak(t *testing.T, newModel func(*httptest.Server) llm.Model, head string) {
	srv, handlerDone := hold(head)
	defer srv.Close()
	for ev, err := range newModel(srv).Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}) {
		if err != nil || ev.Type != llm.EventStart {
			t.Fatalf("%v %v", ev.Type, err)
		}
		break
	}
	<-handlerDone
}

// Fixture returns the file testdata/name of the package under test.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Case is one recorded stream and what a wire must make of it.
type Case struct {
	Name    string
	Fixture string // the file under testdata
	// Transform, when set, rewrites the fixture before it is served.
	Transform func(string) string
	Types     string // the event types, space-separated
	// Check, when set, looks at the final message.
	Check func(t *testing.T, m *llm.Message)
}

// RunCases serves each case's stream to a model newModel makes for the
// server, whole and in the Pieces, and checks the stream ends without
// error with the case's event types, then runs its Check. request, when
// set, checks the request the server received.
func RunCases(t *testing.T, cases []Case, newModel func(*httptest.Server) llm.Model, req *llm.Request, request func(t *testing.T, c *Capture)) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			body := Fixture(t, tt.Fixture)
			if tt.Transform != nil {
				body = tt.Transform(body)
			}
			var c Capture
			Split(t, body, &c, func(t *testing.T, srv *httptest.Server) {
				r := Collect(t, newModel(srv), context.Background(), req)
				if r.Err != nil {
					t.Fatalf("error: %v", r.Err)
				}
				if got := Types(r.Types); got != tt.Types {
					t.Errorf("events\n got %s\nwant %s", got, tt.Types)
				}
				if tt.Check != nil {
					tt.Check(t, r.Msg)
				}
				if request != nil {
					request(t, &c)
				}
			})
		})
	}
}

// Pieces are the read sizes Split feeds a stream in besides whole: one
// byte, an odd size that cuts lines, fields and UTF-8 sequences anywhere,
// and a size that holds a few events.
var Pieces = []int{1, 7, 64}

// Split runs run once per way of feeding body: as the server sends it
// (whole), and then with the client reading it at most n bytes at a time
// for each n of Pieces, so a decoder meets every cut of every line.
// run's server answers every request with body (recorded in c when c is
// not nil); its Client is the one to use.
func Split(t *testing.T, body string, c *Capture, run func(t *testing.T, srv *httptest.Server)) {
	t.Helper()
	t.Run("whole", func(t *testing.T) { run(t, Serve(t, 200, nil, body, c)) })
	for _, n := range Pieces {
		t.Run(fmt.Sprintf("%d-byte", n), func(t *testing.T) {
			srv := Serve(t, 200, nil, body, c)
			// The server's own client, which the models of the tests use,
			// reads its responses in pieces.
			cl := srv.Client()
			cl.Transport = pieceTransport{base: cl.Transport, n: n}
			run(t, srv)
		})
	}
}

// pieceTransport hands out response bodies at most n bytes per Read.
type pieceTransport struct {
	base http.RoundTripper
	n    int
}

func (p pieceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &pieceBody{ReadCloser: resp.Body, n: p.n}
	return resp, nil
}

type pieceBody struct {
	io.ReadCloser
	n int
}

func (b *pieceBody) Read(p []byte) (int, error) {
	if len(p) > b.n {
		p = p[:b.n]
	}
	return b.ReadCloser.Read(p)
}

// Cancelled checks that a call whose context was cancelled before it
// began gives one bare error that is context.Canceled and, when cause is
// not nil, quotes the cause. The server answers body if it is asked.
func Cancelled(t *testing.T, newModel func(*httptest.Server) llm.Model, body string, cause error) {
	t.Helper()
	srv := Serve(t, 200, nil, body, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	r := Collect(t, newModel(srv), ctx, &llm.Request{SystemPrompt: "Be brief.", Messages: []llm.Message{llm.UserText("hi")}})
	if !r.Bare || !errors.Is(r.Err, context.Canceled) || (cause != nil && !strings.Contains(r.Err.Error(), cause.Error())) {
		t.Fatalf("bare %v err %v", r.Bare, r.Err)
	}
}

// BenchStream measures m streaming body, which it must do without error:
// bytes/s of the body and events/s. m should answer with body in memory
// (Replay).
func BenchStream(b *testing.B, m llm.Model, req *llm.Request, body string) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		for ev, err := range m.Stream(context.Background(), req) {
			if err != nil || ev.Type == llm.EventError {
				b.Fatal(err, ev.Err)
			}
			events++
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchToolArgs measures m streaming body, a reply with one tool call
// whose final arguments are argsLen bytes long, which each run checks.
func BenchToolArgs(b *testing.B, m llm.Model, req *llm.Request, body string, argsLen int) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var last llm.Event
		for ev := range m.Stream(context.Background(), req) {
			last = ev
		}
		if last.Type != llm.EventDone || len(last.Message.ToolCalls()[0].Arguments) != argsLen {
			b.Fatalf("last event %s", last.Type)
		}
	}
}

// Seeds adds every recorded stream under testdata (*.sse) to a fuzz
// target's corpus.
func Seeds(f *testing.F) {
	f.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

// StreamFailure is what a stream that failed after it began must report.
type StreamFailure struct {
	Reasons []llm.Reason // the acceptable reasons; nil means any
	Words   []string     // the error quotes each of them
	Text    string       // the partial text the message keeps
}

// CheckStreamFailure checks the result of a stream that failed after it
// began: a final error event with a *llm.ProviderError of an acceptable
// reason that quotes the words, and the message so far, stopped for the
// error, with its error message and the partial text. It returns the
// error for the checks a wire adds.
func CheckStreamFailure(t testing.TB, r Result, want StreamFailure) *llm.ProviderError {
	t.Helper()
	if r.Bare || len(r.Types) == 0 || r.Types[len(r.Types)-1] != llm.EventError {
		t.Fatalf("want a final error event, got %s (bare %v: %v)", Types(r.Types), r.Bare, r.Err)
	}
	var pe *llm.ProviderError
	if !errors.As(r.Err, &pe) {
		t.Fatalf("error %T %v is not a *llm.ProviderError", r.Err, r.Err)
	}
	if want.Reasons != nil && !slices.Contains(want.Reasons, pe.Reason) {
		t.Errorf("reason %q, want one of %v", pe.Reason, want.Reasons)
	}
	for _, w := range want.Words {
		if !strings.Contains(pe.Error(), w) {
			t.Errorf("error %q does not quote %q", pe.Error(), w)
		}
	}
	if r.Msg.StopReason != llm.StopReasonError || r.Msg.ErrorMessage == "" {
		t.Errorf("stop %q error message %q", r.Msg.StopReason, r.Msg.ErrorMessage)
	}
	if r.Msg.Text() != want.Text {
		t.Errorf("partial text %q, want %q", r.Msg.Text(), want.Text)
	}
	return pe
}
