package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/builtin"
	"github.com/agentloop/agentloop/harness/harnesstest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSelect(t *testing.T) {
	b := builtin.Harness{}
	cc := &harnesstest.Fake{Name: "claude-code"}
	pi := &harnesstest.Fake{Name: "pi"}
	auto := &harnesstest.Fake{Name: "fake"} // claims provider "fake"
	hs := []harness.Harness{cc, pi, auto}
	pol := harness.Policy{ByModel: map[string]string{"anthropic/opus": "claude-code"}, ByProvider: map[string]string{"anthropic": "pi", "fake": "pi"}}
	cases := []struct {
		name  string
		r     harness.Route
		p     harness.Policy
		bound *harness.Binding
		want  string
	}{
		{"model beats provider", harness.Route{Provider: "anthropic", Model: "opus"}, pol, nil, "claude-code,builtin"},
		{"provider", harness.Route{Provider: "anthropic", Model: "haiku"}, pol, nil, "pi,builtin"},
		{"provider beats auto", harness.Route{Provider: "fake", Model: "x"}, pol, nil, "pi,builtin"},
		{"auto", harness.Route{Provider: "fake", Model: "x"}, harness.Policy{}, nil, "fake,builtin"},
		{"auto without fallback", harness.Route{Provider: "fake"}, harness.Policy{NoFallback: true}, nil, "fake"},
		{"nothing claims: builtin", harness.Route{Provider: "openai"}, harness.Policy{}, nil, "builtin"},
		{"forced never falls back", harness.Route{Provider: "openai"}, harness.Policy{Force: "pi"}, nil, "pi"},
		{"forced builtin", harness.Route{Provider: "fake"}, harness.Policy{Force: "builtin"}, nil, "builtin"},
		{"default", harness.Route{Provider: "openai"}, harness.Policy{Default: "claude-code"}, nil, "claude-code,builtin"},
		{"provider beats default", harness.Route{Provider: "anthropic"}, harness.Policy{ByProvider: pol.ByProvider, Default: "claude-code"}, nil, "pi,builtin"},
		{"default builtin beats auto", harness.Route{Provider: "fake"}, harness.Policy{Default: "builtin"}, nil, "builtin"},
		{"bound session is pinned", harness.Route{Provider: "fake"}, harness.Policy{Force: "builtin"}, &harness.Binding{Harness: "claude-code", NativeID: "s1"}, "claude-code"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chain, err := harness.Select(context.Background(), hs, b, c.r, c.p, c.bound)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range chain {
				got = append(got, h.ID())
			}
			if strings.Join(got, ",") != c.want {
				t.Errorf("chain %v, want %s", got, c.want)
			}
		})
	}
	if _, err := harness.Select(context.Background(), hs, b, harness.Route{}, harness.Policy{Force: "codex"}, nil); err == nil {
		t.Error("an unknown forced harness was accepted")
	}
}

func TestRunMovesOnOnlyOnPreflight(t *testing.T) {
	m := faux.New(faux.Say("from builtin"))
	broken := &harnesstest.Fake{Name: "broken", Preflight: errors.New("engine not installed")}
	res, h, err := harness.Run(context.Background(), []harness.Harness{broken, builtin.Harness{}}, &harness.Attempt{Prompt: llm.UserText("hi"), Model: m})
	if err != nil || h.ID() != "builtin" || res.Text() != "from builtin" {
		t.Fatalf("preflight fallback: harness %v err %v", h, err)
	}
	// A harness that claimed the attempt and failed is not replayed.
	fails := &harnesstest.Fake{Name: "fails"}
	m2 := faux.New(faux.Fail(llm.ReasonOverloaded, "overloaded"), faux.Say("second"))
	res, h, err = harness.Run(context.Background(), []harness.Harness{fails, builtin.Harness{}}, &harness.Attempt{Prompt: llm.UserText("hi"), Model: m2})
	if err != nil || h.ID() != "fails" || res.Err == nil || m2.Calls() != 1 {
		t.Fatalf("claimed attempt: harness %v err %v result err %v calls %d", h, err, res.Err, m2.Calls())
	}
	// The last harness's preflight error is the answer.
	_, _, err = harness.Run(context.Background(), []harness.Harness{broken}, &harness.Attempt{Model: m})
	var pe *harness.PreflightError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v, want the preflight error", err)
	}
}

func TestTrackerKeepsMutatingFailure(t *testing.T) {
	var tr harness.Tracker
	args := json.RawMessage(`{"path":"a","text":"x"}`)
	r := tr.Observe(harness.ToolTerminal{CallID: "1", Name: "write", Args: args, ExecutionStarted: true, Outcome: harness.OutcomeFailure, Mutating: true, Error: "disk full"})
	if r.LastToolError == nil || r.LastToolError.CallID != "1" || !r.SideEffects {
		t.Fatalf("after the failure %+v", r)
	}
	// Unrelated successes keep it: a read, and a write elsewhere.
	tr.Observe(harness.ToolTerminal{CallID: "2", Name: "read", Args: json.RawMessage(`{"path":"a"}`), ExecutionStarted: true, Outcome: harness.OutcomeSuccess})
	r = tr.Observe(harness.ToolTerminal{CallID: "3", Name: "write", Args: json.RawMessage(`{"path":"b","text":"x"}`), ExecutionStarted: true, Outcome: harness.OutcomeSuccess, Mutating: true})
	if r.LastToolError == nil || r.LastToolError.CallID != "1" {
		t.Fatalf("an unrelated success cleared the failure: %+v", r)
	}
	// A failed read-only call is no mutating failure.
	tr.Observe(harness.ToolTerminal{CallID: "4", Name: "read", Outcome: harness.OutcomeFailure, ExecutionStarted: true})
	// The matching success (same tool, same arguments in another order) clears it.
	r = tr.Observe(harness.ToolTerminal{CallID: "5", Name: "write", Args: json.RawMessage(`{"text":"x", "path":"a"}`), ExecutionStarted: true, Outcome: harness.OutcomeSuccess, Mutating: true})
	if r.LastToolError != nil {
		t.Fatalf("the matching success did not clear the failure: %+v", r.LastToolError)
	}
	if tr.Reports() != 5 {
		t.Errorf("%d reports", tr.Reports())
	}
	// A refused call is no side effect.
	var t2 harness.Tracker
	if r := t2.Observe(harness.ToolTerminal{CallID: "1", Name: "write", Outcome: harness.OutcomeFailure, Mutating: true}); r.SideEffects || r.LastToolError == nil {
		t.Errorf("refused call: %+v", r)
	}
}

func call(id string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall(id, "bash", json.RawMessage(`{}`))}, StopReason: llm.StopReasonToolUse}
}

func result(id string) llm.Message {
	return llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "bash", Content: []llm.Content{llm.Text("ok")}}
}

func say(text string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(text)}, StopReason: llm.StopReasonStop}
}

func TestSettled(t *testing.T) {
	empty := llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonStop}
	cases := []struct {
		name string
		msgs []llm.Message
		want bool
	}{
		{"tools then nothing", []llm.Message{call("1"), result("1")}, true},
		{"tools then an empty reply", []llm.Message{call("1"), result("1"), empty}, true},
		{"tools then text", []llm.Message{call("1"), result("1"), say("done")}, false},
		{"a call unanswered", []llm.Message{call("1")}, false},
		{"no tools", []llm.Message{say("hi")}, false},
	}
	for _, c := range cases {
		if got := harness.Settled(c.msgs); got != c.want {
			t.Errorf("%s: Settled %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFinalizeSettledTurnIsIsolated(t *testing.T) {
	m := faux.New(faux.Say("the answer"))
	frozen := []llm.Message{llm.UserText("run it"), call("1"), result("1")}
	before := frozen[2].Text()
	msg, err := harness.FinalizeSettledTurn(context.Background(), m, "sys", frozen, llm.Options{})
	if err != nil || msg.Text() != "the answer" {
		t.Fatalf("finalize: %q %v", msg.Text(), err)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d calls, want exactly one", len(reqs))
	}
	r := reqs[0]
	if len(r.Tools) != 0 || r.Options.ToolChoice != "none" || r.SystemPrompt != "sys" {
		t.Errorf("the call offered tools %d, tool choice %q", len(r.Tools), r.Options.ToolChoice)
	}
	if len(r.Messages) != 4 || r.Messages[2].Role != llm.RoleToolResult {
		t.Errorf("the call did not see the frozen transcript: %d messages", len(r.Messages))
	}
	if len(frozen) != 3 || frozen[2].Text() != before {
		t.Error("finalization changed the caller's transcript")
	}
	// A failed finalization is an error, never a retry.
	m2 := faux.New(faux.Fail(llm.ReasonOverloaded, "overloaded"), faux.Say("again"))
	if _, err := harness.FinalizeSettledTurn(context.Background(), m2, "", frozen, llm.Options{}); err == nil || m2.Calls() != 1 {
		t.Errorf("err %v after %d calls, want one failed call", err, m2.Calls())
	}
	// A reply calling tools keeps no call.
	m3 := faux.New(faux.Call("", "bash", map[string]string{"command": "rm -rf /"}))
	if msg, err := harness.FinalizeSettledTurn(context.Background(), m3, "", frozen, llm.Options{}); err == nil || len(msg.ToolCalls()) != 0 {
		t.Errorf("a tool-calling finalization: err %v calls %d", err, len(msg.ToolCalls()))
	}
}

func TestContinuation(t *testing.T) {
	failed := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("half")}, StopReason: llm.StopReasonError}
	c := harness.NewContinuation(llm.UserText("go"), []llm.Message{call("1"), result("1"), call("2"), result("2"), failed})
	if len(c.Completed) != 4 {
		t.Fatalf("kept %d, want both completed pairs", len(c.Completed))
	}
	if got := c.Messages(); len(got) != 5 || got[0].Text() != "go" {
		t.Errorf("messages %d", len(got))
	}
	// A call without its result ends the continuation before it.
	c = harness.NewContinuation(llm.UserText("go"), []llm.Message{call("1"), result("1"), call("2")})
	if len(c.Completed) != 2 {
		t.Errorf("kept %d, want the answered pair only", len(c.Completed))
	}
}

func TestMirrorID(t *testing.T) {
	if got := harness.MirrorID("claude-code", "s1", "2", "msg_1", "0"); got != "claude-code/s1/2/msg_1/0" {
		t.Errorf("got %s", got)
	}
}

func TestBindingLostError(t *testing.T) {
	err := error(&harness.BindingLostError{Harness: "claude-code", NativeID: "abc", SessionID: "s1"})
	if !errors.Is(err, harness.ErrBindingLost) || !strings.Contains(err.Error(), "agentloop sessions unbind s1") {
		t.Errorf("%v", err)
	}
}

// The user turn counts as persisted only when this attempt appended it:
// not when the session had it already, not when the append failed.
func TestMirrorPromptPersisted(t *testing.T) {
	st := session.NewJSONLStore(t.TempDir())
	sess, err := st.Create(context.Background(), session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	a := &harness.Attempt{Mirror: harness.SessionMirror(sess)}
	user := harness.Item{MirrorID: "fake/t/1/user", Message: llm.UserText("hi")}
	m := harness.NewMirror(a)
	if err := m.Add(context.Background(), user, true); err != nil || !m.PromptPersisted {
		t.Fatalf("first append: %v persisted %v", err, m.PromptPersisted)
	}
	m2 := harness.NewMirror(a)
	if err := m2.Add(context.Background(), user, true); err != nil || m2.PromptPersisted {
		t.Errorf("an already mirrored prompt reported as persisted (%v)", err)
	}
	if n := len(sess.Transcript().Entries); n != 1 {
		t.Errorf("%d entries, want the prompt once", n)
	}
	failing := &harness.Attempt{Mirror: func(context.Context, harness.Item) (bool, error) { return false, errors.New("disk full") }}
	m3 := harness.NewMirror(failing)
	if err := m3.Add(context.Background(), user, true); err == nil || m3.PromptPersisted {
		t.Errorf("a failed append: err %v persisted %v", err, m3.PromptPersisted)
	}
}
