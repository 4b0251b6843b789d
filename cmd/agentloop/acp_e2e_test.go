package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// editor is the editor's side of `agentloop acp` run as a subprocess, as
// Zed runs it: the SDK's client over the child's stdin and stdout.
type editor struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	asked   []sdk.RequestPermissionRequest
	answer  sdk.PermissionOptionId
}

func (e *editor) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	e.mu.Lock()
	e.updates = append(e.updates, n.Update)
	e.mu.Unlock()
	return nil
}

func (e *editor) RequestPermission(_ context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asked = append(e.asked, req)
	e.mu.Unlock()
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(e.answer)}, nil
}

func (e *editor) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound("fs/read_text_file")
}
func (e *editor) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound("fs/write_text_file")
}
func (e *editor) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (e *editor) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}
func (e *editor) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}
func (e *editor) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}
func (e *editor) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}

// startACP starts the built CLI's `agentloop acp` against the scripted
// server at base, in workspace ws, with more flags args, and connects an
// editor to it. The
// returned function closes the editor's end and waits for the process,
// which must exit 0 once its stdin ends.
func startACP(t *testing.T, home, ws, base string, ed *editor, args ...string) (*sdk.ClientSideConnection, func() string) {
	t.Helper()
	return startACPWith(t, home, ws, ed, append([]string{"--model", "openai/mock-model", "--base-url", base + "/v1"}, args...)...)
}

// startACPWith is startACP with only the flags args.
func startACPWith(t *testing.T, home, ws string, ed *editor, args ...string) (*sdk.ClientSideConnection, func() string) {
	t.Helper()
	cmd := exec.Command(builtCLI(t), append([]string{"acp"}, args...)...)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home, "OPENAI_API_KEY=sk-mock"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The logger is set before the connection reads anything (SetLogger
	// races with a connection already reading).
	gate := make(chan struct{})
	conn := sdk.NewClientSideConnection(ed, stdin, readerFunc(func(p []byte) (int, error) {
		<-gate
		return stdout.Read(p)
	}))
	conn.SetLogger(slog.New(slog.DiscardHandler))
	close(gate)
	stopped := false
	stop := func() string {
		if stopped {
			return stderr.String()
		}
		stopped = true
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agentloop acp exited with %v after its stdin closed\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("agentloop acp did not exit within 10s of its stdin closing\n%s", stderr.String())
		}
		<-conn.Done()
		return stderr.String()
	}
	t.Cleanup(func() { stop() })
	return conn, stop
}

// An editor drives the built binary over stdio against mockllm: it
// initialises, opens a session in its workspace, prompts, allows the bash
// call the model makes when asked, and reads the run as updates; a second
// process loads the session and replays it; session/list lists it.
func TestE2EACPEditor(t *testing.T) {
	base := mockLLM(t, "-rounds", "1", "-cmd", "touch made-by-bash", "-text", "3")
	home, ws := t.TempDir(), t.TempDir()
	ed := &editor{answer: "allow_once"}
	conn, stop := startACP(t, home, ws, base, ed)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	init, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != 1 || !init.AgentCapabilities.LoadSession || init.AgentInfo == nil || init.AgentInfo.Name != "agentloop" {
		t.Fatalf("initialize: %+v", init)
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Modes == nil || ns.Modes.CurrentModeId != "ask" {
		t.Fatalf("the session starts in mode %+v, want ask", ns.Modes)
	}
	resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("make the file")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", resp.StopReason)
	}
	if _, err := os.Stat(filepath.Join(ws, "made-by-bash")); err != nil {
		t.Fatal("the allowed bash call did not run in the workspace:", err)
	}
	ed.mu.Lock()
	asked := len(ed.asked)
	var seq []string
	text := ""
	for _, u := range ed.updates {
		switch {
		case u.ToolCall != nil:
			seq = append(seq, "tool_call "+string(u.ToolCall.Status)+" "+string(u.ToolCall.Kind)+" "+u.ToolCall.Title)
		case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil:
			seq = append(seq, "update "+string(*u.ToolCallUpdate.Status))
		case u.AgentMessageChunk != nil:
			text += u.AgentMessageChunk.Content.Text.Text
		}
	}
	ed.mu.Unlock()
	if asked != 1 {
		t.Fatalf("%d permission requests, want 1 (for bash)", asked)
	}
	want := []string{"tool_call pending execute Run `touch made-by-bash`", "update in_progress", "update completed"}
	if strings.Join(seq, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tool updates:\n%s\nwant:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
	if text != "word word done" {
		t.Fatalf("agent text %q", text)
	}
	list, err := conn.ListSessions(ctx, sdk.ListSessionsRequest{Cwd: sdk.Ptr(ws)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].SessionId != ns.SessionId {
		t.Fatalf("session/list: %+v", list.Sessions)
	}
	if errs := stop(); strings.Contains(errs, "panic") {
		t.Fatalf("stderr:\n%s", errs)
	}

	// A new process (the editor restarted) loads the session.
	ed2 := &editor{answer: "allow_once"}
	conn2, stop2 := startACP(t, home, ws, base, ed2)
	if _, err := conn2.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn2.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: ws, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	ed2.mu.Lock()
	var user, calls string
	for _, u := range ed2.updates {
		switch {
		case u.UserMessageChunk != nil:
			user += u.UserMessageChunk.Content.Text.Text
		case u.ToolCall != nil:
			calls += u.ToolCall.Title
		}
	}
	ed2.mu.Unlock()
	if user != "make the file" || calls != "Run `touch made-by-bash`" {
		t.Fatalf("replayed user %q, calls %q", user, calls)
	}
	stop2()
}

// The MCP servers an editor passes with session/new reach the model
// beside agentloop's own: the model calls the editor's HTTP server's tool,
// the editor sees it as an "other" call, allows it, and gets its result.
func TestE2EACPEditorMCPServer(t *testing.T) {
	var cfg struct {
		MCPServers map[string]struct{ URL string } `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(greeterServers(t)), &cfg); err != nil {
		t.Fatal(err)
	}
	base := mockLLM(t, "-rounds", "1", "-tool", "mcp__greeter__greet", "-args", `{"name":"Ada"}`, "-text", "1")
	home, ws := t.TempDir(), t.TempDir()
	ed := &editor{answer: "allow_once"}
	conn, stop := startACP(t, home, ws, base, ed)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{
		{Http: &sdk.McpServerHttpInline{Name: "greeter", Type: "http", Url: cfg.MCPServers["greeter"].URL, Headers: []sdk.HttpHeader{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("greet Ada")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", resp.StopReason)
	}
	ed.mu.Lock()
	defer ed.mu.Unlock()
	var kind sdk.ToolKind
	result := ""
	for _, u := range ed.updates {
		if u.ToolCall != nil {
			kind = u.ToolCall.Kind
		}
		if tu := u.ToolCallUpdate; tu != nil && tu.Status != nil && *tu.Status == sdk.ToolCallStatusCompleted && len(tu.Content) > 0 {
			result = tu.Content[0].Content.Content.Text.Text
		}
	}
	if len(ed.asked) != 1 || kind != sdk.ToolKindOther || result != "Hello, Ada" {
		t.Fatalf("asked %d times, kind %q, result %q\n%s", len(ed.asked), kind, result, stop())
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// /compact in an editor runs agentloop compact on the session, and its
// report is the reply; the model is asked for the summary, not the
// prompt.
func TestE2EACPCompactCommand(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	long := strings.Repeat("This is a long answer about the code. ", 300)
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"model":{"contextWindow":16000},"steps":[`+
		`{"text":"`+long+`"},{"text":"`+long+`"},{"text":"`+long+`"},{"text":"The summary."}]}`)
	ed := &editor{answer: "allow_once"}
	// The script's window is sized so that three answers fit beside the
	// tools' specs without compacting; the agent tools' specs would tip it.
	conn, stop := startACPWith(t, home, ws, ed, "--script", script, "--no-agents")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"one", "two", "three", "/compact keep the answers"} {
		r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(p)}})
		if err != nil || r.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("%s: %v %v\n%s", p, r.StopReason, err, stop())
		}
	}
	ed.mu.Lock()
	last := ed.updates[len(ed.updates)-1]
	commands := ed.updates[0].AvailableCommandsUpdate
	ed.mu.Unlock()
	if commands == nil || len(commands.AvailableCommands) != 5 || commands.AvailableCommands[0].Name != "compact" {
		t.Fatalf("commands %+v", commands)
	}
	if last.AgentMessageChunk == nil || !strings.HasPrefix(last.AgentMessageChunk.Content.Text.Text, "compacted session "+string(ns.SessionId)) {
		t.Fatalf("the /compact reply: %+v\n%s", last, stop())
	}
}
