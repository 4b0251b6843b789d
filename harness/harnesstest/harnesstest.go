package harnesstest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// Caps says which parts of the contract a harness has.
type Caps struct {
	// Native: the harness owns native threads (Binding, resume, lost
	// binding, replayed items).
	Native bool
}

// Run runs the conformance suite against the harness newHarness returns.
// The model of every attempt is a scripted llm/faux model; an external
// harness under test must drive its engine with Attempt.Model.
func Run(t *testing.T, newHarness func(t *testing.T) harness.Harness, caps Caps) {
	tests := []struct {
		name   string
		native bool
		f      func(t *testing.T, h harness.Harness)
	}{
		{"PlainAnswer", false, testPlain},
		{"ToolAllowed", false, testToolAllowed},
		{"ToolDenied", false, testToolDenied},
		{"AbortMidTool", false, testAbort},
		{"ContinuationDoesNotRerunTools", false, testContinuation},
		{"ResumeWithBinding", true, testResume},
		{"LostBinding", true, testLostBinding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.native && !caps.Native {
				t.Skip("the harness owns no native session")
			}
			tt.f(t, newHarness(t))
		})
	}
}

// Counter is a tool that may change things; it counts its runs. With
// Block set, a call waits for its context.
type Counter struct {
	N     atomic.Int32
	Block bool
}

func (c *Counter) Name() string        { return "touch" }
func (c *Counter) Description() string { return "Touches a file." }
func (c *Counter) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
}
func (c *Counter) Execute(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
	c.N.Add(1)
	if c.Block {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}
	return tool.Result{Content: []llm.Content{llm.Text("touched")}}, nil
}

type env struct {
	sess  session.Session
	store *session.JSONLStore
	tr    *harness.Tracker
}

func newEnv(t *testing.T) *env {
	st := session.NewJSONLStore(t.TempDir())
	sess, err := st.Create(context.Background(), session.CreateOptions{Cwd: "/conformance"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &env{sess: sess, store: st, tr: &harness.Tracker{}}
}

func (e *env) attempt(t *testing.T, m llm.Model, prompt string, reg *tool.Registry, ap *tool.Approval) *harness.Attempt {
	return &harness.Attempt{SessionID: e.sess.ID(), RunID: "run-" + prompt, Attempt: 1, Prompt: llm.UserText(prompt),
		History: e.sess.Context().Messages, Model: m, Tools: reg, Approval: ap,
		Mirror: harness.SessionMirror(e.sess), ObserveToolTerminal: e.tr.Observe}
}

func registry(t *testing.T, c *Counter) *tool.Registry {
	reg, err := tool.NewRegistry(c)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func run(t *testing.T, h harness.Harness, ctx context.Context, a *harness.Attempt) *harness.Result {
	t.Helper()
	res, err := h.RunAttempt(ctx, a)
	if err != nil {
		t.Fatalf("RunAttempt: %v", err)
	}
	return res
}

// transcript is the session's messages as role:text lines, tool results
// as result:<call id>.
func transcript(s session.Session) []string {
	var out []string
	for _, m := range s.Context().Messages {
		switch {
		case m.Role == llm.RoleToolResult:
			out = append(out, "result:"+m.ToolCallID)
		case len(m.ToolCalls()) > 0:
			out = append(out, "call:"+m.ToolCalls()[0].Name)
		default:
			out = append(out, string(m.Role)+":"+m.Text())
		}
	}
	return out
}

func want(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("transcript\n got %q\nwant %q", got, want)
	}
}

func testPlain(t *testing.T, h harness.Harness) {
	e := newEnv(t)
	res := run(t, h, context.Background(), e.attempt(t, faux.New(faux.Say("hello there")), "hi", nil, nil))
	if res.Err != nil || res.StopReason != llm.StopReasonStop || res.Text() != "hello there" {
		t.Fatalf("result err %v stop %s text %q", res.Err, res.StopReason, res.Text())
	}
	if res.SideEffects || !res.PromptPersisted {
		t.Errorf("side effects %v (want false), prompt persisted %v (want true)", res.SideEffects, res.PromptPersisted)
	}
	want(t, transcript(e.sess), []string{"user:hi", "assistant:hello there"})
	for _, it := range res.Items {
		if it.MirrorID == "" {
			t.Errorf("an item without a mirror id: %+v", it.Message)
		}
	}
}

func testToolAllowed(t *testing.T, h harness.Harness) {
	e := newEnv(t)
	c := &Counter{}
	m := faux.New(faux.Call("", "touch", map[string]string{"path": "a"}), faux.Say("done"))
	res := run(t, h, context.Background(), e.attempt(t, m, "touch a", registry(t, c), &tool.Approval{}))
	if res.Err != nil || res.Text() != "done" || c.N.Load() != 1 {
		t.Fatalf("err %v text %q runs %d", res.Err, res.Text(), c.N.Load())
	}
	if !res.SideEffects {
		t.Error("a mutating tool ran but SideEffects is false")
	}
	if e.tr.Reports() != 1 {
		t.Errorf("%d terminal reports, want 1", e.tr.Reports())
	}
	want(t, transcript(e.sess), []string{"user:touch a", "call:touch", "result:" + firstCall(e.sess), "assistant:done"})
}

func testToolDenied(t *testing.T, h harness.Harness) {
	e := newEnv(t)
	c := &Counter{}
	deny := &tool.Approval{Policy: func(context.Context, tool.Call, bool) tool.Decision {
		return tool.Decision{Verdict: tool.VerdictDeny, Reason: "no touching"}
	}}
	m := faux.New(faux.Call("", "touch", map[string]string{"path": "a"}), faux.Say("ok, I won't"))
	res := run(t, h, context.Background(), e.attempt(t, m, "touch a", registry(t, c), deny))
	if c.N.Load() != 0 {
		t.Fatal("a denied call ran")
	}
	if res.SideEffects {
		t.Error("SideEffects set though the only call was denied")
	}
	r := e.tr.Resolution()
	if r.SideEffects || r.LastToolError == nil || r.LastToolError.ExecutionStarted {
		t.Errorf("terminal bookkeeping %+v, want a failure that never started", r)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || !strings.Contains(lastResultText(reqs[1].Messages), "no touching") {
		t.Errorf("the model did not read the denial: %d requests", len(reqs))
	}
}

func testAbort(t *testing.T, h harness.Harness) {
	e := newEnv(t)
	c := &Counter{Block: true}
	m := faux.New(faux.Call("", "touch", map[string]string{"path": "a"}), faux.Say("never"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for c.N.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	res, err := h.RunAttempt(ctx, e.attempt(t, m, "touch a", registry(t, c), nil))
	if time.Since(start) > 10*time.Second {
		t.Errorf("the abort took %s", time.Since(start))
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("RunAttempt: %v", err)
	}
	if res != nil && res.StopReason != llm.StopReasonAborted {
		t.Errorf("stop reason %s, want aborted", res.StopReason)
	}
	// Pairing: the started call has its result in the mirror.
	got := transcript(e.sess)
	if len(got) < 3 || got[1] != "call:touch" || !strings.HasPrefix(got[2], "result:") {
		t.Errorf("after the abort the transcript is %q; the call needs its result", got)
	}
}

func testContinuation(t *testing.T, h harness.Harness) {
	e := newEnv(t)
	c := &Counter{}
	reg := registry(t, c)
	m := faux.New(faux.Call("", "touch", map[string]string{"path": "a"}), faux.Fail(llm.ReasonOverloaded, "overloaded"), faux.Say("done"))
	a := e.attempt(t, m, "touch a", reg, nil)
	res := run(t, h, context.Background(), a)
	if res.Err == nil || llm.ReasonOf(res.Err) != llm.ReasonOverloaded {
		t.Fatalf("first attempt err %v, want the overload", res.Err)
	}
	var msgs []llm.Message
	for _, it := range res.Items {
		if it.Message.Role != llm.RoleUser {
			msgs = append(msgs, it.Message)
		}
	}
	cont := harness.NewContinuation(a.Prompt, msgs)
	if len(cont.Completed) != 2 {
		t.Fatalf("continuation keeps %d messages, want the call and its result", len(cont.Completed))
	}
	a2 := e.attempt(t, m, "touch a", reg, nil)
	a2.History, a2.Attempt, a2.Continuation = a.History, 2, cont
	res2 := run(t, h, context.Background(), a2)
	if res2.Err != nil || res2.Text() != "done" {
		t.Fatalf("retry err %v text %q", res2.Err, res2.Text())
	}
	if c.N.Load() != 1 {
		t.Errorf("the tool ran %d times, want once: the retry re-ran it", c.N.Load())
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1].Messages
	if lastResultText(last) != "touched" || last[0].Text() != "touch a" {
		t.Errorf("the retry did not carry the prompt and the completed result")
	}
}

func testResume(t *testing.T, h harness.Harness) {
	e := newEnv(t)
	m := faux.New(faux.Say("one"), faux.Say("two"))
	r1 := run(t, h, context.Background(), e.attempt(t, m, "first", nil, nil))
	if r1.Binding == nil || r1.Binding.NativeID == "" {
		t.Fatal("no binding after the first turn")
	}
	a := e.attempt(t, m, "second", nil, nil)
	a.Binding = r1.Binding
	r2 := run(t, h, context.Background(), a)
	if r2.Err != nil || r2.Binding == nil || r2.Binding.NativeID != r1.Binding.NativeID {
		t.Fatalf("second turn err %v binding %+v, want the same native session", r2.Err, r2.Binding)
	}
	want(t, transcript(e.sess), []string{"user:first", "assistant:one", "user:second", "assistant:two"})
	if n := len(m.Requests()[1].Messages); n != 3 {
		t.Errorf("the resumed turn sent %d messages, want the earlier turn and the new prompt", n)
	}
}

func testLostBinding(t *testing.T, h harness.Harness) {
	e := newEnv(t)
	a := e.attempt(t, faux.New(faux.Say("never")), "hi", nil, nil)
	a.Binding = &harness.Binding{Harness: h.ID(), NativeID: "gone-thread"}
	res, err := h.RunAttempt(context.Background(), a)
	if err == nil && res != nil {
		err = res.Err
	}
	if !errors.Is(err, harness.ErrBindingLost) || !strings.Contains(err.Error(), "sessions unbind") {
		t.Fatalf("err %v, want ErrBindingLost with the unbind hint", err)
	}
	if len(transcript(e.sess)) != 0 {
		t.Errorf("a lost binding wrote %q", transcript(e.sess))
	}
}

func firstCall(s session.Session) string {
	for _, m := range s.Context().Messages {
		if cs := m.ToolCalls(); len(cs) > 0 {
			return cs[0].ID
		}
	}
	return ""
}

func lastResultText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleToolResult {
			return msgs[i].Text()
		}
	}
	return ""
}
