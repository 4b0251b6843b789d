package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// testServer is a gateway over a faux model and a JSONL store, served on a
// real TCP listener.
type testServer struct {
	t      *testing.T
	s      *Server
	ts     *httptest.Server
	rn     *runner.Runner
	model  *faux.Model
	store  *session.JSONLStore
	cwd    string
	token  string
	policy tool.ApprovalPolicy
	// runnerConfig is the Runner's Config; options may change it.
	runnerConfig runner.Config
	// connContext, when set, is the http.Server's ConnContext.
	connContext func(context.Context, net.Conn) context.Context
}

type serverOpt func(*Config, *testServer)

// newTestServer starts a server whose runs play steps. Cleanup shuts it
// down in the order agentloop serve does.
func newTestServer(t *testing.T, steps []faux.Step, opts ...serverOpt) *testServer {
	t.Helper()
	tsv := &testServer{t: t, model: faux.New(steps...), cwd: t.TempDir()}
	tsv.model.Now = fixedNow
	tsv.store = session.NewJSONLStore(t.TempDir())
	tsv.runnerConfig = runner.Config{Store: tsv.store, Now: fixedNow}
	cfg := Config{Store: tsv.store, StateDir: t.TempDir(),
		Prepare: func(ctx context.Context, rs RunSettings) (runner.Request, error) {
			reg, err := tool.NewRegistry(echoTool())
			if err != nil {
				return runner.Request{}, err
			}
			q := runner.Request{Model: tsv.model, Info: tsv.model.ModelInfo(), Tools: reg,
				Approval: &tool.Approval{Policy: tsv.policy}, Retry: &runner.RetryPolicy{Base: time.Millisecond}}
			return q, nil
		}}
	for _, o := range opts {
		o(&cfg, tsv)
	}
	rn, err := runner.New(tsv.runnerConfig)
	if err != nil {
		t.Fatal(err)
	}
	tsv.rn = rn
	cfg.Runner = rn
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tsv.s = s
	tsv.ts = httptest.NewUnstartedServer(s.Handler())
	if tsv.connContext != nil {
		tsv.ts.Config.ConnContext = tsv.connContext
	}
	tsv.ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		tsv.ts.Close()
		rn.Close()
	})
	return tsv
}

// echoTool answers with its text argument.
func echoTool() tool.Tool {
	type in struct {
		Text string `json:"text"`
	}
	return tool.New("echo", "echo the text", func(ctx context.Context, a in, _ func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult("echo: " + a.Text), nil
	})
}

// do sends a JSON request and decodes the JSON answer into out (nil:
// ignore); it returns the status.
func (tsv *testServer) do(method, path string, body, out any) int {
	tsv.t.Helper()
	resp := tsv.request(method, path, body, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tsv.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

func (tsv *testServer) request(method, path string, body any, hdr http.Header) *http.Response {
	tsv.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tsv.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, tsv.ts.URL+path, rd)
	if err != nil {
		tsv.t.Fatal(err)
	}
	if tsv.token != "" {
		req.Header.Set("Authorization", "Bearer "+tsv.token)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tsv.t.Fatal(err)
	}
	return resp
}

// newSession creates a session in the test's workspace.
func (tsv *testServer) newSession() Session {
	tsv.t.Helper()
	var v Session
	if st := tsv.do("POST", "/v1/sessions", CreateSessionRequest{Cwd: tsv.cwd}, &v); st != http.StatusCreated {
		tsv.t.Fatalf("create session: %d", st)
	}
	return v
}

// startRun starts a run and returns its answer.
func (tsv *testServer) startRun(sessionID, text, key, onBusy string) (RunInfo, int) {
	tsv.t.Helper()
	var info RunInfo
	body := map[string]any{"input": text, "idempotencyKey": key}
	if onBusy != "" {
		body["onBusy"] = onBusy
	}
	st := tsv.do("POST", "/v1/sessions/"+sessionID+"/runs", body, &info)
	return info, st
}

// sseMsg is one SSE message.
type sseMsg struct {
	id    string // "" when the message had none
	event string
	data  string
}

func (m sseMsg) seq() int64 { n, _ := strconv.ParseInt(m.id, 10, 64); return n }

// fields decodes the message's data.
func (m sseMsg) fields(t *testing.T) map[string]any {
	t.Helper()
	var f map[string]any
	if err := json.Unmarshal([]byte(m.data), &f); err != nil {
		t.Fatalf("data of %s is not JSON: %v: %s", m.event, err, m.data)
	}
	return f
}

// sseStream reads an event stream.
type sseStream struct {
	resp     *http.Response
	rd       *bufio.Reader
	comments chan string
	msgs     chan sseMsg
	errc     chan error
}

// events opens an event stream at path with hdr.
func (tsv *testServer) events(path string, hdr http.Header) *sseStream {
	tsv.t.Helper()
	resp := tsv.request("GET", path, nil, hdr)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tsv.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	st := &sseStream{resp: resp, rd: bufio.NewReader(resp.Body), msgs: make(chan sseMsg, 100000), errc: make(chan error, 1),
		comments: make(chan string, 1000)}
	go st.read()
	tsv.t.Cleanup(st.close)
	return st
}

func (st *sseStream) read() {
	var m sseMsg
	var data []string
	for {
		line, err := st.rd.ReadString('\n')
		if err != nil {
			st.errc <- err
			close(st.msgs)
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if m.event != "" || len(data) > 0 {
				m.data = strings.Join(data, "\n")
				st.msgs <- m
			}
			m, data = sseMsg{}, nil
		case strings.HasPrefix(line, ":"):
			select {
			case st.comments <- line:
			default:
			}
		case strings.HasPrefix(line, "id: "):
			m.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			m.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		}
	}
}

func (st *sseStream) close() { st.resp.Body.Close() }

// until reads messages until one of type typ (and, when given, the test
// of f), returning all read; it fails after 10 s.
func (st *sseStream) until(t *testing.T, typ string) []sseMsg {
	t.Helper()
	var got []sseMsg
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-st.msgs:
			if !ok {
				t.Fatalf("the stream ended before a %s event; got %d events", typ, len(got))
			}
			got = append(got, m)
			if m.event == typ {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s event within 10s; got %v", typ, types(got))
		}
	}
}

// rest reads every message until the stream ends.
func (st *sseStream) rest(t *testing.T) []sseMsg {
	t.Helper()
	var got []sseMsg
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-st.msgs:
			if !ok {
				return got
			}
			got = append(got, m)
		case <-timeout:
			t.Fatalf("the stream did not end within 10s; got %v", types(got))
		}
	}
}

func types(ms []sseMsg) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.event
	}
	return out
}

func fixedNow() int64 { return 1_700_000_000_000 }

func userText(s string) llm.Message { return llm.UserText(s) }

// runToIdle runs text on a session and waits until the session is idle
// again (its last event, session_status idle, sent).
func (tsv *testServer) runToIdle(sessionID, text, key string) (RunInfo, []sseMsg) {
	tsv.t.Helper()
	var v Session
	tsv.do("GET", "/v1/sessions/"+sessionID, nil, &v)
	st := tsv.events("/v1/sessions/"+sessionID+"/events?after="+strconv.FormatInt(v.HeadSeq, 10), nil)
	defer st.close()
	info, code := tsv.startRun(sessionID, text, key, "")
	if code != http.StatusAccepted {
		tsv.t.Fatalf("start run: %d", code)
	}
	var got []sseMsg
	for {
		ms := st.until(tsv.t, EventSessionStatus)
		got = append(got, ms...)
		if m := ms[len(ms)-1]; m.fields(tsv.t)["status"] == StatusIdle {
			return info, got
		}
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
