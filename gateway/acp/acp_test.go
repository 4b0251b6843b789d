package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var durationRE = regexp.MustCompile(`"durationMs":\d+`)

// readEditBash is a run that reads a file, edits it and runs bash. The
// read starts while its reply is still open (it only reads); hold, when
// set, keeps the reply open until the test closes it, so the read's end
// and the reply's end come in one order.
func readEditBash(hold <-chan struct{}) *faux.Model {
	first := faux.Reply(faux.Thinking("Look at the file first."), faux.Text("Reading it."), faux.ToolCall("read", map[string]any{"path": "notes.txt"}))
	first.Hold = hold
	return faux.New(
		first,
		faux.Call("Fixing the typo.", "edit", map[string]any{"path": "notes.txt", "edits": []map[string]string{{"oldText": "teh", "newText": "the"}}}),
		faux.Call("", "bash", map[string]any{"command": "rm -f gone.txt"}),
		faux.Say("Fixed."),
	)
}

// The exact messages an editor reads during a run with a read, an edit
// and a bash call in ask mode, the editor allowing each: text and thought
// chunks, each call pending (the edit with its diff), the permission
// requests of the calls that change something, in_progress only after
// them, completed, the usage, and the prompt's answer last.
func TestGoldenReadEditBash(t *testing.T) {
	hold := make(chan struct{})
	cl := &client{onUpdate: func(n sdk.SessionNotification) {
		if u := n.Update.ToolCallUpdate; u != nil && u.ToolCallId == "call_1_2" && u.Status != nil && *u.Status == sdk.ToolCallStatusCompleted {
			close(hold)
		}
	}}
	e := serve(t, readEditBash(hold), nil, cl)
	e.write("notes.txt", "teh cat\n")
	e.initialize()
	sid := e.newSession()
	from := len(e.wire.messages())
	resp := e.prompt(sid, "fix the typo in notes.txt")
	if resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", resp.StopReason)
	}
	if got, _ := os.ReadFile(filepath.Join(e.cwd, "notes.txt")); string(got) != "the cat\n" {
		t.Fatalf("notes.txt is %q after the edit", got)
	}
	var lines []string
	for _, m := range e.wire.messages()[from:] {
		delete(m, "jsonrpc")
		lines = append(lines, e.normalized(m, sid))
	}
	golden := filepath.Join("testdata", "read_edit_bash.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Split(strings.TrimSuffix(string(want), "\n"), "\n"), lines); diff != "" {
		t.Errorf("the wire differs from %s (-want +got; go test -update rewrites it):\n%s", golden, diff)
	}
	// The order the issue asks for, spelled out beside the golden file.
	steps := e.wire.steps()
	edit, bash := "call_2_1", "call_3_0"
	for _, id := range []string{edit, bash} {
		pending, ask, running, done := index(steps, "tool_call "+id+" pending"), index(steps, "permission "+id),
			index(steps, "tool_call_update "+id+" in_progress"), index(steps, "tool_call_update "+id+" completed")
		if !(pending >= 0 && pending < ask && ask < running && running < done) {
			t.Errorf("%s: pending at %d, permission at %d, in_progress at %d, completed at %d:\n%s", id, pending, ask, running, done, strings.Join(steps, "\n"))
		}
	}
	if index(steps, "permission call_1_2") >= 0 {
		t.Error("the read was asked about: a read-only call needs no permission")
	}
}

// A call that needs approval stays pending until the editor answers: when
// the request arrives, the editor has the pending tool_call and nothing
// of it in progress; in_progress follows the answer.
func TestPermissionOrder(t *testing.T) {
	cl := &client{asked: make(chan sdk.RequestPermissionRequest, 1)}
	m := faux.New(faux.Call("", "bash", map[string]any{"command": "touch made"}), faux.Say("made"))
	e := serve(t, m, nil, cl)
	var atAsk []string
	cl.answer = func(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		atAsk = e.wire.steps()
		if len(req.Options) != 4 || req.Options[0].Kind != sdk.PermissionOptionKindAllowOnce || req.Options[1].Kind != sdk.PermissionOptionKindAllowAlways ||
			req.Options[2].Kind != sdk.PermissionOptionKindRejectOnce || req.Options[3].Kind != sdk.PermissionOptionKindRejectAlways {
			t.Errorf("options %+v", req.Options)
		}
		if req.ToolCall.Status == nil || *req.ToolCall.Status != sdk.ToolCallStatusPending || req.ToolCall.Kind == nil || *req.ToolCall.Kind != sdk.ToolKindExecute {
			t.Errorf("the request's tool call: %+v", req.ToolCall)
		}
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow_once")}, nil
	}
	e.initialize()
	sid := e.newSession()
	if r := e.prompt(sid, "make a file"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}
	<-cl.asked
	id := "call_1_0"
	if index(atAsk, "tool_call "+id+" pending") < 0 || index(atAsk, "tool_call_update "+id+" in_progress") >= 0 {
		t.Fatalf("when the permission was asked the wire held:\n%s", strings.Join(atAsk, "\n"))
	}
	steps := e.wire.steps()
	if !(index(steps, "permission "+id) < index(steps, "tool_call_update "+id+" in_progress") &&
		index(steps, "tool_call_update "+id+" in_progress") < index(steps, "tool_call_update "+id+" completed")) {
		t.Fatalf("steps:\n%s", strings.Join(steps, "\n"))
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "made")); err != nil {
		t.Fatal("the allowed call did not run:", err)
	}
}

// Rejecting marks the call failed without ever showing it in progress,
// and the model reads the denial; "always reject" refuses the tool's next
// call in the session without asking.
func TestReject(t *testing.T) {
	cl := &client{}
	answers := []string{"reject_once", "reject_always"}
	cl.answer = func(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		a := answers[0]
		answers = answers[1:]
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(a))}, nil
	}
	m := faux.New(
		faux.Call("", "bash", map[string]any{"command": "touch one"}), faux.Say("refused"),
		faux.Call("", "bash", map[string]any{"command": "touch two"}), faux.Say("refused again"),
		faux.Call("", "bash", map[string]any{"command": "touch three"}), faux.Say("refused for good"),
	)
	e := serve(t, m, nil, cl)
	e.initialize()
	sid := e.newSession()
	for i := range 3 {
		if r := e.prompt(sid, fmt.Sprintf("try %d", i)); r.StopReason != sdk.StopReasonEndTurn {
			t.Fatal(r.StopReason)
		}
	}
	steps := e.wire.steps()
	for i, id := range []string{"call_1_0", "call_3_0", "call_5_0"} {
		if index(steps, "tool_call "+id+" pending") < 0 || index(steps, "tool_call_update "+id+" failed") < 0 || index(steps, "tool_call_update "+id+" in_progress") >= 0 {
			t.Errorf("%s:\n%s", id, strings.Join(steps, "\n"))
		}
		if asked := index(steps, "permission "+id) >= 0; asked != (i < 2) {
			t.Errorf("%s asked: %v", id, asked)
		}
	}
	for _, f := range []string{"one", "two", "three"} {
		if _, err := os.Stat(filepath.Join(e.cwd, f)); err == nil {
			t.Errorf("the rejected call made %s", f)
		}
	}
	reqs := m.Requests()
	for i, want := range map[int]string{1: "Denied by the user", 5: "always reject bash"} {
		msgs := reqs[i].Messages
		last := msgs[len(msgs)-1]
		if last.Role != llm.RoleToolResult || !last.IsError || !strings.Contains(last.Content[0].Text, want) {
			t.Errorf("request %d ends with %+v, want the denial %q", i, last, want)
		}
	}
}

// Cancelling while the editor is asked: the permission request is
// withdrawn ($/cancel_request reaches the editor's handler), the call
// fails, and the prompt ends cancelled within a second.
func TestCancelDuringPermission(t *testing.T) {
	cl := &client{asked: make(chan sdk.RequestPermissionRequest, 1)}
	withdrawn := make(chan struct{})
	cl.answer = func(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		<-ctx.Done() // the person never answers
		close(withdrawn)
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	m := faux.New(faux.Call("", "bash", map[string]any{"command": "touch never"}), faux.Say("unreachable"))
	e := serve(t, m, nil, cl)
	e.initialize()
	sid := e.newSession()
	got := make(chan sdk.PromptResponse, 1)
	go func() {
		r, err := e.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("go")}})
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	<-cl.asked
	start := time.Now()
	if err := e.conn.Cancel(t.Context(), sdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.StopReason != sdk.StopReasonCancelled {
			t.Fatalf("stop reason %s, want cancelled", r.StopReason)
		}
	case <-time.After(time.Second):
		t.Fatal("the prompt did not end within 1s of session/cancel")
	}
	t.Logf("cancelled in %v", time.Since(start))
	select {
	case <-withdrawn:
	case <-time.After(time.Second):
		t.Fatal("the permission request was not withdrawn")
	}
	steps := e.wire.steps()
	if index(steps, "tool_call_update call_1_0 failed") < 0 || index(steps, "tool_call_update call_1_0 in_progress") >= 0 {
		t.Fatalf("steps:\n%s", strings.Join(steps, "\n"))
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "never")); err == nil {
		t.Fatal("the call ran after the cancel")
	}
	if m.Calls() != 1 {
		t.Fatalf("the model was called %d times: a cancelled run goes no further", m.Calls())
	}
}

// Cancelling while a tool runs, by session/cancel and by $/cancel_request
// on the prompt: the prompt ends cancelled within a second, bash killed.
func TestCancelDuringTool(t *testing.T) {
	for _, how := range []string{"session/cancel", "$/cancel_request"} {
		t.Run(how, func(t *testing.T) {
			// The sleep is a child of the shell: cancel kills the tree.
			m := faux.New(faux.Call("", "bash", map[string]any{"command": "sleep 30 & echo $! > sleep.pid; wait"}), faux.Say("unreachable"))
			e := serve(t, m, nil, nil)
			e.initialize()
			sid := e.newSession()
			e.setMode(sid, "auto")
			got := make(chan error, 1)
			go func() {
				_, err := e.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("wait")}})
				got <- err
			}()
			pidFile := filepath.Join(e.cwd, "sleep.pid")
			for index(e.wire.steps(), "tool_call_update call_1_0 in_progress") < 0 || !nonEmpty(pidFile) {
				time.Sleep(5 * time.Millisecond) // waiting for the subprocess to start
			}
			start := time.Now()
			if how == "session/cancel" {
				if err := e.conn.Cancel(t.Context(), sdk.CancelNotification{SessionId: sid}); err != nil {
					t.Fatal(err)
				}
			} else {
				// Only $/cancel_request: the SDK's client would follow
				// it with a session/cancel of its own.
				e.raw(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + e.requestID("session/prompt") + `}}`)
			}
			deadline := time.After(time.Second)
			for {
				if r := promptResult(e.wire.messages()); r != "" {
					if r != string(sdk.StopReasonCancelled) {
						t.Fatalf("the prompt answered %s", r)
					}
					break
				}
				select {
				case <-deadline:
					t.Fatalf("no answer to the prompt within 1s of %s", how)
				case <-time.After(5 * time.Millisecond):
				}
			}
			t.Logf("answered cancelled %v after %s", time.Since(start), how)
			<-got
			if index(e.wire.steps(), "tool_call_update call_1_0 failed") < 0 {
				t.Fatalf("steps:\n%s", strings.Join(e.wire.steps(), "\n"))
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid := strings.TrimSpace(string(b))
			for alive(pid) {
				if time.Since(start) > 2*time.Second {
					t.Fatalf("bash's child sleep (pid %s) still runs %v after %s", pid, time.Since(start), how)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func nonEmpty(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Size() > 0
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// promptResult is the stop reason the agent answered a prompt with, ""
// before it has.
func promptResult(msgs []map[string]any) string {
	for _, m := range msgs {
		if r, ok := m["result"].(map[string]any); ok {
			if s, ok := r["stopReason"].(string); ok {
				return s
			}
		}
	}
	return ""
}

// session/load replays what the transcript holds, as updates, before its
// response: every user text, thought, reply text, tool call and result of
// the file, in the file's order.
func TestLoadReplaysTranscript(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	first := serve(t, readEditBash(nil), store, nil)
	first.write("notes.txt", "teh cat\n")
	first.initialize()
	sid := first.newSession()
	first.setMode(sid, "auto")
	if r := first.prompt(sid, "fix the typo"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}

	second := serve(t, faux.New(), store, nil)
	second.cwd = first.cwd
	second.initialize()
	if _, err := second.conn.LoadSession(t.Context(), sdk.LoadSessionRequest{SessionId: sid, Cwd: first.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	// The response comes after every replayed update.
	msgs := second.wire.messages()
	resp := slices.IndexFunc(msgs, isLoadResponse)
	if resp != len(msgs)-1 {
		t.Fatalf("the load response is message %d of %d", resp, len(msgs))
	}

	tr, err := store.Load(t.Context(), string(sid))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range tr.Path(tr.Leaf) {
		if e.Type != session.EntryMessage {
			continue
		}
		for _, b := range e.Message.Content {
			switch {
			case e.Message.Role == llm.RoleUser && b.Type == llm.ContentText:
				want = append(want, "user "+b.Text)
			case b.Type == llm.ContentThinking:
				want = append(want, "thought "+b.Thinking)
			case e.Message.Role == llm.RoleAssistant && b.Type == llm.ContentText:
				want = append(want, "agent "+b.Text)
			case b.Type == llm.ContentToolCall:
				want = append(want, "call "+b.ID+" "+b.Name)
			case e.Message.Role == llm.RoleToolResult && b.Type == llm.ContentText:
				status := "completed"
				if e.Message.IsError {
					status = "failed"
				}
				want = append(want, "result "+e.Message.ToolCallID+" "+status+" "+b.Text)
			}
		}
	}
	var got []string
	second.cl.mu.Lock()
	for _, n := range second.cl.updates {
		u := n.Update
		switch {
		case u.UserMessageChunk != nil:
			got = append(got, "user "+u.UserMessageChunk.Content.Text.Text)
		case u.AgentThoughtChunk != nil:
			got = append(got, "thought "+u.AgentThoughtChunk.Content.Text.Text)
		case u.AgentMessageChunk != nil:
			got = append(got, "agent "+u.AgentMessageChunk.Content.Text.Text)
		case u.ToolCall != nil:
			got = append(got, "call "+string(u.ToolCall.ToolCallId)+" "+toolOf(u.ToolCall.RawInput, u.ToolCall.Kind))
		case u.ToolCallUpdate != nil:
			for _, c := range u.ToolCallUpdate.Content {
				got = append(got, "result "+string(u.ToolCallUpdate.ToolCallId)+" "+string(*u.ToolCallUpdate.Status)+" "+c.Content.Content.Text.Text)
			}
			if len(u.ToolCallUpdate.Content) == 0 { // an edit keeps its diff: the result text is the tool's
				got = append(got, "result "+string(u.ToolCallUpdate.ToolCallId)+" "+string(*u.ToolCallUpdate.Status)+" "+resultText(tr, string(u.ToolCallUpdate.ToolCallId)))
			}
		}
	}
	second.cl.mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("replay differs from the transcript (-transcript +replay):\n%s", diff)
	}
	if len(want) < 10 {
		t.Fatalf("a transcript of %d items is too small to prove anything: %v", len(want), want)
	}
	// A replayed call is pending, then completed, as live.
	if s := second.wire.steps(); index(s, "tool_call call_2_1 pending") < 0 || index(s, "tool_call_update call_2_1 completed") < 0 {
		t.Fatalf("steps:\n%s", strings.Join(s, "\n"))
	}
	// The loaded session carries on: a prompt appends to the same file.
	second.model.Append(faux.Say("again"))
	if r := second.prompt(sid, "more"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}
	tr2, _ := store.Load(t.Context(), string(sid))
	if len(tr2.Entries) != len(tr.Entries)+2 {
		t.Fatalf("the loaded session has %d entries after a prompt, want %d", len(tr2.Entries), len(tr.Entries)+2)
	}
}

func isLoadResponse(m map[string]any) bool {
	r, _ := m["result"].(map[string]any)
	_, ok := r["modes"]
	return ok
}

// toolOf names the tool a replayed call stands for, by its kind (the
// tool_call carries no name but its title and kind).
func toolOf(_ any, kind sdk.ToolKind) string {
	return map[sdk.ToolKind]string{sdk.ToolKindRead: "read", sdk.ToolKindEdit: "edit", sdk.ToolKindExecute: "bash"}[kind]
}

func resultText(tr *session.Transcript, id string) string {
	for _, e := range tr.Entries {
		if e.Message != nil && e.Message.ToolCallID == id && len(e.Message.Content) > 0 {
			return e.Message.Content[0].Text
		}
	}
	return ""
}

// session/list lists the store's sessions of a directory; session/new
// gives the editor the id the transcript gets.
func TestListSessions(t *testing.T) {
	e := serve(t, faux.New(faux.Say("hi")), nil, nil)
	e.initialize()
	sid := e.newSession()
	e.prompt(sid, "hello")
	resp, err := e.conn.ListSessions(t.Context(), sdk.ListSessionsRequest{Cwd: sdk.Ptr(e.cwd)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Sessions) != 1 || resp.Sessions[0].SessionId != sid || resp.Sessions[0].Cwd != e.cwd || resp.Sessions[0].UpdatedAt == nil {
		t.Fatalf("sessions %+v, want %s in %s", resp.Sessions, sid, e.cwd)
	}
	if _, err := e.store.Load(t.Context(), string(sid)); err != nil {
		t.Fatalf("the transcript of %s: %v", sid, err)
	}
}

// session/set_mode switches the approval mode: in never, a call that could
// change something is refused without asking; the model option switches
// the model of the next runs; an unknown mode is an error.
func TestModeAndModel(t *testing.T) {
	cl := &client{asked: make(chan sdk.RequestPermissionRequest, 4)}
	m := faux.New(faux.Call("", "bash", map[string]any{"command": "touch nope"}), faux.Say("ok"), faux.Say("ok"))
	e := serve(t, m, nil, cl)
	e.initialize()
	resp, err := e.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.SessionId
	if resp.Modes == nil || resp.Modes.CurrentModeId != "ask" || len(resp.Modes.AvailableModes) != 3 || len(resp.ConfigOptions) != 2 {
		t.Fatalf("new session: %+v", resp)
	}
	if _, err := e.conn.SetSessionMode(t.Context(), sdk.SetSessionModeRequest{SessionId: sid, ModeId: "sometimes"}); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
	e.setMode(sid, "never")
	e.prompt(sid, "try")
	if len(cl.asked) != 0 {
		t.Fatal("never mode asked")
	}
	if s := e.wire.steps(); index(s, "tool_call_update call_1_0 failed") < 0 || index(s, "tool_call_update call_1_0 in_progress") >= 0 {
		t.Fatalf("steps:\n%s", strings.Join(s, "\n"))
	}
	set, err := e.conn.SetSessionConfigOption(t.Context(), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "faux/other"}})
	if err != nil {
		t.Fatal(err)
	}
	if set.ConfigOptions[1].Select.CurrentValue != "faux/other" {
		t.Fatalf("options after set: %+v", set.ConfigOptions[1].Select)
	}
	if _, err := e.conn.SetSessionConfigOption(t.Context(), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "nobody/none"}}); err == nil {
		t.Fatal("a model not offered was accepted")
	}
	e.prompt(sid, "again")
	e.mu.Lock()
	defer e.mu.Unlock()
	if last := e.sets[len(e.sets)-1]; last.Model != "faux/other" || last.Mode != "never" {
		t.Fatalf("the second run's settings %+v", last)
	}
	if e.sets[0].Model != "faux/"+m.ModelInfo().ID {
		t.Fatalf("the first run's model %q, want the first offered", e.sets[0].Model)
	}
}

// The slash commands are package command's ACP face, sent as
// available_commands_update before the first prompt's updates; a command
// is answered without calling the model.
func TestSlashCommands(t *testing.T) {
	m := faux.New()
	e := serve(t, m, nil, nil)
	e.initialize()
	sid := e.newSession()
	if r := e.prompt(sid, "/thinking high"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}
	e.prompt(sid, "/cost")
	e.prompt(sid, "/quit")
	if m.Calls() != 0 {
		t.Fatalf("a command reached the model (%d calls)", m.Calls())
	}
	e.cl.mu.Lock()
	defer e.cl.mu.Unlock()
	ups := e.cl.updates
	if ups[0].Update.AvailableCommandsUpdate == nil {
		t.Fatalf("first update %+v", ups[0].Update)
	}
	var names []string
	for _, c := range ups[0].Update.AvailableCommandsUpdate.AvailableCommands {
		names = append(names, c.Name)
	}
	if want := []string{"model", "thinking", "tools", "cost"}; !slices.Equal(names, want) {
		t.Fatalf("commands %v, want %v (package command's ACP face; /compact only with Config.Compact)", names, want)
	}
	var replies []string
	for _, u := range ups[1:] {
		if u.Update.AgentMessageChunk != nil {
			replies = append(replies, u.Update.AgentMessageChunk.Content.Text.Text)
		}
	}
	if len(replies) != 3 || !strings.Contains(replies[0], "high") || !strings.Contains(replies[1], "tokens") || !strings.Contains(replies[2], "not available") {
		t.Fatalf("replies %q", replies)
	}
}

// The editor's MCP servers reach the session's Runner as our MCP
// configuration, stdio and HTTP alike; SSE is refused (not offered).
func TestEditorMCPServers(t *testing.T) {
	e := serve(t, faux.New(), nil, nil)
	e.initialize()
	_, err := e.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "files", Command: "npx", Args: []string{"-y", "server"}, Env: []sdk.EnvVariable{{Name: "TOKEN", Value: "x"}}}},
		{Http: &sdk.McpServerHttpInline{Name: "web", Type: "http", Url: "http://127.0.0.1:1/mcp", Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer y"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	got := e.opened[0].MCP.Servers
	e.mu.Unlock()
	if f := got["files"]; f.Type != "stdio" || f.Command != "npx" || !slices.Equal(f.Args, []string{"-y", "server"}) || f.Env["TOKEN"] != "x" {
		t.Errorf("stdio server %+v", f)
	}
	if w := got["web"]; w.Type != "http" || w.URL != "http://127.0.0.1:1/mcp" || w.Headers["Authorization"] != "Bearer y" {
		t.Errorf("http server %+v", w)
	}
	_, err = e.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{
		{Sse: &sdk.McpServerSseInline{Name: "old", Type: "sse", Url: "http://127.0.0.1:1/sse", Headers: []sdk.HttpHeader{}}}}})
	if err == nil {
		t.Fatal("an SSE server was accepted")
	}
	if _, err := e.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: "relative/dir", McpServers: []sdk.McpServer{}}); err == nil {
		t.Fatal("a relative cwd was accepted")
	}
}

// How a run ends is the prompt's stop reason: the turn limit is
// max_turn_requests, a reply cut off at the output limit max_tokens, and a
// failed run a JSON-RPC error carrying the message people read.
func TestStopReasons(t *testing.T) {
	t.Run("max_turn_requests", func(t *testing.T) {
		e := serve(t, faux.New(faux.Call("", "ls", map[string]any{}), faux.Say("unreachable")), nil, nil)
		e.adjust = func(q *runner.Request) { q.MaxTurns = 1 }
		e.initialize()
		if r := e.prompt(e.newSession(), "list"); r.StopReason != sdk.StopReasonMaxTurnRequests {
			t.Fatalf("stop reason %s", r.StopReason)
		}
	})
	t.Run("max_tokens", func(t *testing.T) {
		// The reply and the three continuations the stop chain asks for
		// are all cut off.
		cut := faux.Say("half an ans")
		cut.StopReason = llm.StopReasonLength
		e := serve(t, faux.New(cut, cut, cut, cut), nil, nil)
		e.initialize()
		if r := e.prompt(e.newSession(), "answer"); r.StopReason != sdk.StopReasonMaxTokens {
			t.Fatalf("stop reason %s", r.StopReason)
		}
	})
	t.Run("error", func(t *testing.T) {
		e := serve(t, faux.New(faux.Refuse(llm.ReasonAuthPermanent, 401, "invalid x-api-key")), nil, nil)
		e.initialize()
		sid := e.newSession()
		_, err := e.conn.Prompt(t.Context(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
		var re *sdk.RequestError
		if !errors.As(err, &re) || re.Code != -32603 || !strings.Contains(strings.ToLower(re.Message), "key") {
			t.Fatalf("error %v, want a JSON-RPC error saying what failed", err)
		}
		if promptResult(e.wire.messages()) != "" {
			t.Fatal("a failed run was answered with a stop reason")
		}
	})
}

// session/new with _meta.agentloop.session opens that session: the next
// prompt continues its transcript.
func TestNewSessionMetaSelectsSession(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	e := serve(t, faux.New(faux.Say("one"), faux.Say("two")), store, nil)
	e.initialize()
	first := e.newSession()
	e.prompt(first, "hello")
	resp, err := e.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{},
		Meta: map[string]any{"agentloop": map[string]any{"session": string(first)}, "someone.else": true}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.SessionId != first {
		t.Fatalf("session %s, want the named %s", resp.SessionId, first)
	}
	e.prompt(first, "again")
	tr, err := store.Load(t.Context(), string(first))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.Context(tr.Leaf).Messages); n != 4 {
		t.Fatalf("%d messages, want both prompts' 4", n)
	}
	if _, err := e.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{},
		Meta: map[string]any{"agentloop": map[string]any{"session": "no-such-session"}}}); err == nil {
		t.Fatal("an unknown session was opened")
	}
}

// There is no plan tool: a task list the model writes in its reply is the
// editor's plan, sent when the reply ends.
func TestPlanFromTaskList(t *testing.T) {
	e := serve(t, faux.New(faux.Say("The plan:\n\n- [x] read the code\n- [ ] write the test\n1. [~] fix the bug\n\nStarting now.")), nil, nil)
	e.initialize()
	e.prompt(e.newSession(), "plan it")
	e.cl.mu.Lock()
	defer e.cl.mu.Unlock()
	var plan *sdk.SessionUpdatePlan
	for _, n := range e.cl.updates {
		if n.Update.Plan != nil {
			plan = n.Update.Plan
		}
	}
	if plan == nil {
		t.Fatal("no plan update")
	}
	want := []string{"completed read the code", "pending write the test", "in_progress fix the bug"}
	var got []string
	for _, en := range plan.Entries {
		got = append(got, string(en.Status)+" "+en.Content)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan %q, want %q", got, want)
	}
	if s := e.wire.steps(); index(s, "plan") < index(s, "agent_message_chunk") {
		t.Fatalf("the plan came before the reply's text:\n%s", strings.Join(s, "\n"))
	}
}

// The caller's Session.Opened still hears of the session the agent picks
// (the CLI moves bash's spill directory beside the transcript with it).
func TestRequestOpenedKept(t *testing.T) {
	e := serve(t, faux.New(faux.Say("hi")), nil, nil)
	opened := make(chan string, 1)
	e.adjust = func(q *runner.Request) { q.Session.Opened = func(id, _ string) { opened <- id } }
	e.initialize()
	sid := e.newSession()
	e.prompt(sid, "hello")
	select {
	case id := <-opened:
		if id != string(sid) {
			t.Fatalf("Opened(%s), want %s", id, sid)
		}
	default:
		t.Fatal("Opened was not called")
	}
}

// A prompt sent while another runs in the same session replaces it: the
// first ends cancelled (the SDK cancels it), the second runs after it.
func TestNewerPromptReplacesRunning(t *testing.T) {
	m := faux.New(faux.Call("", "bash", map[string]any{"command": "sleep 30"}), faux.Say("second"))
	e := serve(t, m, nil, nil)
	e.initialize()
	sid := e.newSession()
	e.setMode(sid, "auto")
	first := make(chan sdk.PromptResponse, 1)
	go func() {
		r, err := e.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("wait")}})
		if err != nil {
			t.Error(err)
		}
		first <- r
	}()
	for index(e.wire.steps(), "tool_call_update call_1_0 in_progress") < 0 {
		time.Sleep(5 * time.Millisecond) // waiting for the subprocess to start
	}
	if r := e.prompt(sid, "instead"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("the newer prompt ended %s", r.StopReason)
	}
	select {
	case r := <-first:
		if r.StopReason != sdk.StopReasonCancelled {
			t.Fatalf("the replaced prompt ended %s", r.StopReason)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the replaced prompt never answered")
	}
}

// An ACP session id is one the agent gave: session/load (and session/new's
// _meta) take exactly such an id of the connection's store. A path names
// no session, even one of a transcript elsewhere on the machine, and a
// prefix of an id is not the id (it would pick some other session).
func TestLoadTakesOnlyExactIDs(t *testing.T) {
	elsewhere := session.NewJSONLStore(t.TempDir())
	other := serve(t, faux.New(faux.Say("secret reply")), elsewhere, nil)
	other.initialize()
	otherID := other.newSession()
	other.prompt(otherID, "secret prompt")
	path, err := elsewhere.Resolve(string(otherID))
	if err != nil {
		t.Fatal(err)
	}

	e := serve(t, faux.New(faux.Say("mine")), nil, nil)
	e.initialize()
	mine := e.newSession()
	e.prompt(mine, "hello")
	for _, id := range []string{path, string(mine[:len(mine)-3]), "../" + filepath.Base(path)} {
		if _, err := e.conn.LoadSession(t.Context(), sdk.LoadSessionRequest{SessionId: sdk.SessionId(id), Cwd: e.cwd, McpServers: []sdk.McpServer{}}); err == nil {
			t.Errorf("session/load %q: loaded", id)
		}
		if _, err := e.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{},
			Meta: map[string]any{"agentloop": map[string]any{"session": id}}}); err == nil {
			t.Errorf("session/new with _meta session %q: opened", id)
		}
	}
	for _, m := range e.wire.messages() {
		if b, _ := json.Marshal(m); strings.Contains(string(b), "secret") {
			t.Fatalf("the other store's transcript reached the editor: %s", b)
		}
	}
	if _, err := e.conn.LoadSession(t.Context(), sdk.LoadSessionRequest{SessionId: mine, Cwd: e.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load of the exact id: %v", err)
	}
}

// The editor going away mid-prompt (its end of the pipe closed while bash
// runs) ends the run: bash's process tree is killed, and Serve returns
// (the cleanup waits for it; goleak checks nothing is left running).
func TestEditorGoneMidPrompt(t *testing.T) {
	m := faux.New(faux.Call("", "bash", map[string]any{"command": "sleep 30 & echo $! > sleep.pid; wait"}), faux.Say("unreachable"))
	e := serve(t, m, nil, nil)
	e.initialize()
	sid := e.newSession()
	e.setMode(sid, "auto")
	go func() {
		_, _ = e.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("wait")}})
	}()
	pidFile := filepath.Join(e.cwd, "sleep.pid")
	for !nonEmpty(pidFile) {
		time.Sleep(5 * time.Millisecond)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	start := time.Now()
	if err := e.sent.w.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	for alive(pid) {
		if time.Since(start) > 2*time.Second {
			t.Fatalf("bash's child sleep (pid %s) still runs %v after the editor went away", pid, time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("killed %v after the editor went away", time.Since(start))
}

// A session another process is writing (it holds the session's lock) can
// be loaded, but a prompt on it is refused at once, with a message that
// says so, not left waiting; once the lock is free the prompt runs.
func TestPromptOnSessionLockedElsewhere(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	e := serve(t, faux.New(faux.Say("one"), faux.Say("two")), store, nil)
	e.initialize()
	sid := e.newSession()
	e.prompt(sid, "hello")
	lock, err := store.Lock(t.Context(), string(sid), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.conn.LoadSession(t.Context(), sdk.LoadSessionRequest{SessionId: sid, Cwd: e.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("load: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = e.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("again")}})
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("prompt on a locked session: %v, want a JSON-RPC error", err)
	}
	if !strings.Contains(re.Message, "lock") && !strings.Contains(re.Message, "in use") {
		t.Errorf("the editor reads %q (data %v): it does not say the session is in use", re.Message, re.Data)
	}
	lock.Release()
	if r := e.prompt(sid, "again"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("after the lock is free: %s", r.StopReason)
	}
}

// What an editor (or anything on the agent's stdin) sends that cannot
// work is refused at once as invalid params, before a session or a run
// is made of it: an empty prompt, an image that is not base64 image data,
// a cwd that is not a directory, an MCP server with nothing to start. The
// model is never called, and the session still works after.
func TestHostileInputRefused(t *testing.T) {
	m := faux.New(faux.Say("fine"))
	e := serve(t, m, nil, nil)
	e.initialize()
	sid := e.newSession()
	for name, blocks := range map[string][]sdk.ContentBlock{
		"empty":          {},
		"blank text":     {sdk.TextBlock("  \n")},
		"image not b64":  {sdk.TextBlock("look"), sdk.ImageBlock("!!!not base64", "image/png")},
		"image no data":  {sdk.ImageBlock("", "image/png")},
		"image not type": {sdk.ImageBlock("aGVsbG8=", "text/html")},
	} {
		_, err := e.conn.Prompt(t.Context(), sdk.PromptRequest{SessionId: sid, Prompt: blocks})
		var re *sdk.RequestError
		if !errors.As(err, &re) || re.Code != -32602 {
			t.Errorf("prompt %s: %v, want invalid params", name, err)
		}
	}
	missing := filepath.Join(e.cwd, "missing")
	file := filepath.Join(e.cwd, "file")
	e.write("file", "x")
	for name, req := range map[string]sdk.NewSessionRequest{
		"cwd missing": {Cwd: missing, McpServers: []sdk.McpServer{}},
		"cwd a file":  {Cwd: file, McpServers: []sdk.McpServer{}},
		"no command":  {Cwd: e.cwd, McpServers: []sdk.McpServer{{Stdio: &sdk.McpServerStdio{Name: "x", Args: []string{}, Env: []sdk.EnvVariable{}}}}},
		"no url":      {Cwd: e.cwd, McpServers: []sdk.McpServer{{Http: &sdk.McpServerHttpInline{Name: "web", Type: "http", Headers: []sdk.HttpHeader{}}}}},
	} {
		_, err := e.conn.NewSession(t.Context(), req)
		var re *sdk.RequestError
		if !errors.As(err, &re) || re.Code != -32602 {
			t.Errorf("session/new %s: %v, want invalid params", name, err)
		}
	}
	if m.Calls() != 0 {
		t.Fatalf("the model was called %d times", m.Calls())
	}
	if r := e.prompt(sid, "hello"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}
}
