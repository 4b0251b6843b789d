package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/gateway/acp"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/builtin"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wire records what the agent writes, one JSON-RPC message a line, in the
// order it was written: the order an editor reads.
type wire struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
	msg []map[string]any
}

func (w *wire) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		var m map[string]any
		if json.Unmarshal(w.buf[:i], &m) == nil {
			w.msg = append(w.msg, m)
		}
		w.buf = w.buf[i+1:]
	}
	w.mu.Unlock()
	return w.w.Write(p)
}

func (w *wire) messages() []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]map[string]any(nil), w.msg...)
}

// updates are the session/update payloads on the wire, and a
// "permission <toolCallId>" entry for each session/request_permission, in
// order.
func (w *wire) steps() []string {
	var out []string
	for _, m := range w.messages() {
		params, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "session/update":
			u, _ := params["update"].(map[string]any)
			s, _ := u["sessionUpdate"].(string)
			if id, ok := u["toolCallId"].(string); ok {
				s += " " + id
				if st, ok := u["status"].(string); ok {
					s += " " + st
				}
			}
			out = append(out, s)
		case "session/request_permission":
			tc, _ := params["toolCall"].(map[string]any)
			out = append(out, "permission "+tc["toolCallId"].(string))
		}
	}
	return out
}

// client is the editor's side: it records updates and answers
// permission requests with answer.
type client struct {
	mu      sync.Mutex
	updates []sdk.SessionNotification
	answer  func(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
	asked   chan sdk.RequestPermissionRequest
	// onUpdate, when set, sees each update as it is handled.
	onUpdate func(sdk.SessionNotification)
}

func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	if c.onUpdate != nil {
		c.onUpdate(n)
	}
	return nil
}

func (c *client) RequestPermission(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	if c.asked != nil {
		c.asked <- req
	}
	if c.answer == nil {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow_once")}, nil
	}
	return c.answer(ctx, req)
}

var errNoFS = errors.New("this editor offers no file system or terminal")

func (c *client) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errNoFS
}
func (c *client) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errNoFS
}
func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNoFS
}
func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNoFS
}
func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNoFS
}
func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNoFS
}
func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNoFS
}

// env is one agent served over pipes to one client, on a faux model.
type env struct {
	t     *testing.T
	cwd   string
	store session.Store
	model *faux.Model
	wire  *wire // what the agent wrote
	sent  *wire // what the editor wrote
	cl    *client
	conn  *sdk.ClientSideConnection

	// adjust, when set before the first prompt, changes each run's request.
	adjust func(*runner.Request)
	// release, when set, is Config.Release.
	release func(acp.Session, *runner.Runner)

	mu      sync.Mutex
	opened  []acp.Session    // what Config.Open was given
	runners []*runner.Runner // what it returned
	sets    []acp.Settings   // what Config.Request was given
}

// serve starts Serve over io.Pipe with the faux model m, the built-in
// tools in a fresh workspace, and a JSONL store; store may be shared
// between two connections (session/load).
func serve(t *testing.T, m *faux.Model, store session.Store, cl *client) *env {
	t.Helper()
	if store == nil {
		store = session.NewJSONLStore(t.TempDir())
	}
	if cl == nil {
		cl = &client{}
	}
	e := &env{t: t, cwd: t.TempDir(), store: store, model: m, cl: cl}
	cfg := acp.Config{
		Store: store,
		Open: func(ctx context.Context, s acp.Session) (*runner.Runner, error) {
			rn, err := runner.New(runner.Config{Store: store})
			e.mu.Lock()
			e.opened = append(e.opened, s)
			e.runners = append(e.runners, rn)
			e.mu.Unlock()
			return rn, err
		},
		Release: func(s acp.Session, rn *runner.Runner) {
			if e.release != nil {
				e.release(s, rn)
			}
		},
		Request: func(ctx context.Context, s acp.Session, set acp.Settings) (acp.Run, error) {
			e.mu.Lock()
			e.sets = append(e.sets, set)
			e.mu.Unlock()
			ws, err := builtin.NewWorkspace(s.Cwd, nil)
			if err != nil {
				return acp.Run{}, err
			}
			reg, err := tool.NewRegistry(append(builtin.New(ws), builtin.NewBash(builtin.BashOptions{Dir: s.Cwd}))...)
			if err != nil {
				return acp.Run{}, err
			}
			policy, err := tool.ApprovalPolicyFor(set.Mode)
			if err != nil {
				return acp.Run{}, err
			}
			q := runner.Request{Model: m, Info: m.ModelInfo(), Tools: reg, SystemPrompt: "You are a test.",
				Approval: &tool.Approval{Policy: policy}, Timeout: 30 * time.Second}
			if e.adjust != nil {
				e.adjust(&q)
			}
			return acp.Run{Request: q}, nil
		},
		Models: []string{"faux/" + m.ModelInfo().ID, "faux/other"},
	}
	aIn, cOut := io.Pipe()
	cIn, aOut := io.Pipe()
	e.wire = &wire{w: aOut}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = acp.Serve(context.Background(), cfg, aIn, e.wire)
		aOut.Close()
	}()
	e.sent = &wire{w: cOut}
	e.conn = quietClient(cl, e.sent, cIn)
	t.Cleanup(func() {
		cOut.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after the editor closed its end")
		}
		<-e.conn.Done()
		aIn.Close()
		cIn.Close()
	})
	return e
}

// raw writes one JSON-RPC message to the agent, as an editor that does
// not use the SDK would (an io.Pipe gates concurrent writes).
func (e *env) raw(msg string) {
	e.t.Helper()
	if _, err := e.sent.w.Write([]byte(msg + "\n")); err != nil {
		e.t.Fatal(err)
	}
}

// requestID is the id of the editor's last request of method.
func (e *env) requestID(method string) string {
	e.t.Helper()
	msgs := e.sent.messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["method"] == method && msgs[i]["id"] != nil {
			b, _ := json.Marshal(msgs[i]["id"])
			return string(b)
		}
	}
	e.t.Fatalf("no %s request sent", method)
	return ""
}

func (e *env) initialize() {
	e.t.Helper()
	resp, err := e.conn.Initialize(e.t.Context(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.ProtocolVersion != 1 || !resp.AgentCapabilities.LoadSession || !resp.AgentCapabilities.PromptCapabilities.Image ||
		!resp.AgentCapabilities.PromptCapabilities.EmbeddedContext || !resp.AgentCapabilities.McpCapabilities.Http {
		e.t.Fatalf("initialize: %+v", resp)
	}
}

func (e *env) newSession() sdk.SessionId {
	e.t.Helper()
	resp, err := e.conn.NewSession(e.t.Context(), sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.SessionId
}

func (e *env) setMode(id sdk.SessionId, mode string) {
	e.t.Helper()
	if _, err := e.conn.SetSessionMode(e.t.Context(), sdk.SetSessionModeRequest{SessionId: id, ModeId: sdk.SessionModeId(mode)}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) prompt(id sdk.SessionId, text string) sdk.PromptResponse {
	e.t.Helper()
	resp, err := e.conn.Prompt(e.t.Context(), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func (e *env) write(name, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.cwd, name), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// normalized is a wire message as a golden line: temporary paths, the
// session id and durations replaced.
func (e *env) normalized(m map[string]any, sid sdk.SessionId) string {
	b, _ := json.Marshal(m)
	s := strings.ReplaceAll(string(b), e.cwd, "$CWD")
	s = strings.ReplaceAll(s, string(sid), "$SESSION")
	return durationRE.ReplaceAllString(s, `"durationMs":0`)
}

// index is the position of step in steps, -1 when absent.
func index(steps []string, step string) int {
	for i, s := range steps {
		if s == step {
			return i
		}
	}
	return -1
}

// quietClient is the SDK's client side with its log discarded. Its
// logger is set before it reads anything (SetLogger races with a
// connection already reading).
func quietClient(cl sdk.Client, w io.Writer, r io.Reader) *sdk.ClientSideConnection {
	gate := make(chan struct{})
	conn := sdk.NewClientSideConnection(cl, w, gated{r, gate})
	conn.SetLogger(slog.New(slog.DiscardHandler))
	close(gate)
	return conn
}

type gated struct {
	r    io.Reader
	gate chan struct{}
}

func (g gated) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}
