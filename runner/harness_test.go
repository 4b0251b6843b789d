package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/harness/harnesstest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

type harnessEnv struct {
	store *session.JSONLStore
	cwd   string
	fake  *harnesstest.Fake
	r     *Runner
}

func newHarnessEnv(t *testing.T) *harnessEnv {
	st := session.NewJSONLStore(t.TempDir())
	return &harnessEnv{store: st, cwd: t.TempDir(), fake: &harnesstest.Fake{},
		r: testRunner(&Config{Store: st, Retry: RetryPolicy{Base: 1, Max: 1}})}
}

// run runs one turn on the fake engine, in session id ("" for a new one).
func (e *harnessEnv) run(t *testing.T, id, prompt string, m llm.Model, reg *tool.Registry, ev *events) Result {
	t.Helper()
	q := Request{Prompt: prompt, Model: m, Tools: reg, Harness: e.fake, Session: SessionSpec{ID: id, Cwd: e.cwd}}
	if ev != nil {
		q.OnEvent = ev.add
	}
	res, err := e.r.Run(t.Context(), q)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func (e *harnessEnv) entries(t *testing.T, id string) []session.Entry {
	t.Helper()
	tr, err := e.store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Entries
}

func bindingsOf(es []session.Entry) []string {
	var out []string
	for _, e := range es {
		if e.Type == session.EntryHarnessBinding {
			out = append(out, e.Harness+":"+e.NativeID)
		}
	}
	return out
}

func messagesOf(es []session.Entry) []string {
	var out []string
	for _, e := range es {
		if e.Type == session.EntryMessage {
			s := string(e.Message.Role) + ":" + e.Message.Text()
			if cs := e.Message.ToolCalls(); len(cs) > 0 {
				s = "call:" + cs[0].Name
			}
			out = append(out, s)
		}
	}
	return out
}

func join(s []string) string { return strings.Join(s, " | ") }

// Two turns on an external harness: the first binds the session to a new
// native thread, the second resumes it; the engine replays the first turn
// and the transcript still holds each item once.
func TestHarnessTwoTurnsResumeAndMirrorOnce(t *testing.T) {
	e := newHarnessEnv(t)
	m := faux.New(faux.Say("one"), faux.Say("two"))
	r1 := e.run(t, "", "first", m, nil, nil)
	if !r1.OK() || r1.SessionID == "" {
		t.Fatalf("first turn %+v", r1)
	}
	r2 := e.run(t, r1.SessionID, "second", m, nil, nil)
	if !r2.OK() {
		t.Fatalf("second turn %+v", r2)
	}
	es := e.entries(t, r1.SessionID)
	if got := join(messagesOf(es)); got != "user:first | assistant:one | user:second | assistant:two" {
		t.Errorf("transcript %s", got)
	}
	if got := join(bindingsOf(es)); got != "fake:thr1" {
		t.Errorf("bindings %s, want one binding to thr1 (resumed, not a new thread)", got)
	}
	if e.fake.Runs() != 2 || len(m.Requests()[1].Messages) != 3 {
		t.Errorf("runs %d; the second turn sent %d messages", e.fake.Runs(), len(m.Requests()[1].Messages))
	}
	for _, en := range es {
		if en.Type == session.EntryMessage && en.IdemKey == "" {
			t.Errorf("a mirrored message without a mirror id: %s", en.Message.Text())
		}
	}
	if len(r2.Messages) != 2 {
		t.Errorf("the second run reports %d added messages, want its prompt and answer", len(r2.Messages))
	}
}

// A binding whose native thread is gone is a visible error with the way
// out, never a silent fresh thread; unbinding (an empty binding entry)
// starts a new one.
func TestHarnessLostBinding(t *testing.T) {
	e := newHarnessEnv(t)
	m := faux.New(faux.Say("one"), faux.Say("fresh"))
	r1 := e.run(t, "", "first", m, nil, nil)
	e.fake.Lose("thr1")
	r2 := e.run(t, r1.SessionID, "second", m, nil, nil)
	if r2.Reason != ReasonBindingLost || !strings.Contains(r2.Message, "agentloop sessions unbind "+r1.SessionID) {
		t.Fatalf("reason %s message %q", r2.Reason, r2.Message)
	}
	if m.Calls() != 1 {
		t.Errorf("the lost binding reached the model (%d calls)", m.Calls())
	}
	if got := join(messagesOf(e.entries(t, r1.SessionID))); got != "user:first | assistant:one" {
		t.Errorf("transcript %s", got)
	}
	// Unbind, then the next turn starts a new native thread.
	sess, err := e.store.Open(t.Context(), r1.SessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(t.Context(), session.HarnessBindingEntry("fake", "", "", "")); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	r3 := e.run(t, r1.SessionID, "third", m, nil, nil)
	if !r3.OK() {
		t.Fatalf("after unbind %+v", r3)
	}
	if got := join(bindingsOf(e.entries(t, r1.SessionID))); got != "fake:thr1 | fake: | fake:thr2" {
		t.Errorf("bindings %s", got)
	}
}

// A native id that changes under the same session is a transfer: a new
// binding entry, the history kept.
func TestHarnessBindingTransfer(t *testing.T) {
	e := newHarnessEnv(t)
	m := faux.New(faux.Say("one"), faux.Say("two"), faux.Say("three"))
	r1 := e.run(t, "", "first", m, nil, nil)
	e.fake.Transfer("thr1", "thr1b")
	e.run(t, r1.SessionID, "second", m, nil, nil)
	e.run(t, r1.SessionID, "third", m, nil, nil)
	es := e.entries(t, r1.SessionID)
	if got := join(bindingsOf(es)); got != "fake:thr1 | fake:thr1b" {
		t.Errorf("bindings %s, want the transfer recorded once", got)
	}
	if got := join(messagesOf(es)); got != "user:first | assistant:one | user:second | assistant:two | user:third | assistant:three" {
		t.Errorf("transcript %s", got)
	}
}

func touchRegistry(t *testing.T) (*tool.Registry, *harnesstest.Counter) {
	c := &harnesstest.Counter{}
	reg, err := tool.NewRegistry(c)
	if err != nil {
		t.Fatal(err)
	}
	return reg, c
}

// A transient failure after a mutating tool ran is not retried: the run
// ends with the incomplete-turn reason. Without side effects the same
// failure is retried, carrying the continuation.
func TestHarnessRetryGatedOnSideEffects(t *testing.T) {
	e := newHarnessEnv(t)
	reg, c := touchRegistry(t)
	m := faux.New(faux.Call("", "touch", map[string]string{"path": "a"}), faux.Fail(llm.ReasonOverloaded, "overloaded"), faux.Say("never"))
	res := e.run(t, "", "touch a", m, reg, nil)
	if res.Reason != ReasonIncompleteTurn || m.Calls() != 2 || c.N.Load() != 1 {
		t.Fatalf("reason %s (%s) calls %d runs %d", res.Reason, res.Message, m.Calls(), c.N.Load())
	}

	e2 := newHarnessEnv(t)
	ev := &events{}
	m2 := faux.New(faux.Fail(llm.ReasonOverloaded, "overloaded"), faux.Say("done"))
	res = e2.run(t, "", "hi", m2, nil, ev)
	if !res.OK() || res.Retries != 1 || len(ev.notices(EventRetry)) != 1 {
		t.Fatalf("reason %s retries %d", res.Reason, res.Retries)
	}
	es := e2.entries(t, res.SessionID)
	if got := join(messagesOf(es)); got != "user:hi | assistant:done" {
		t.Errorf("transcript %s: the retry mirrored the prompt twice or lost it", got)
	}
}

// Tools finished, no answer: one isolated call finalizes the turn; when
// that call fails the run ends with the incomplete-turn warning, and the
// tool is not run again.
func TestHarnessSettledTurnFinalization(t *testing.T) {
	e := newHarnessEnv(t)
	reg, c := touchRegistry(t)
	empty := faux.Reply().WithStop(llm.StopReasonStop)
	m := faux.New(faux.Call("", "touch", map[string]string{"path": "a"}), empty, faux.Say("final answer"))
	res := e.run(t, "", "touch a", m, reg, nil)
	if !res.OK() || m.Calls() != 3 || c.N.Load() != 1 {
		t.Fatalf("reason %s (%s) calls %d", res.Reason, res.Message, m.Calls())
	}
	last := m.Requests()[2]
	if len(last.Tools) != 0 {
		t.Errorf("the finalization call offered %d tools", len(last.Tools))
	}
	es := e.entries(t, res.SessionID)
	if got := messagesOf(es); got[len(got)-1] != "assistant:final answer" {
		t.Errorf("transcript %s", join(got))
	}

	e2 := newHarnessEnv(t)
	reg2, c2 := touchRegistry(t)
	ev := &events{}
	m2 := faux.New(faux.Call("", "touch", map[string]string{"path": "a"}), empty, faux.Fail(llm.ReasonOverloaded, "overloaded"), faux.Say("no"))
	res = e2.run(t, "", "touch a", m2, reg2, ev)
	if res.Reason != ReasonIncompleteTurn || m2.Calls() != 3 || c2.N.Load() != 1 {
		t.Fatalf("reason %s calls %d runs %d", res.Reason, m2.Calls(), c2.N.Load())
	}
	if w := ev.notices(EventWarning); len(w) != 1 || !strings.Contains(w[0].Message, "without a reply") {
		t.Errorf("warnings %+v", w)
	}
}

// An external run keeps the run's timeout and its abort, and refuses
// steering it cannot deliver.
func TestHarnessTimeoutAndSteer(t *testing.T) {
	e := newHarnessEnv(t)
	c := &harnesstest.Counter{Block: true}
	reg, err := tool.NewRegistry(c)
	if err != nil {
		t.Fatal(err)
	}
	m := faux.New(faux.Call("", "touch", map[string]string{"path": "a"}), faux.Say("never"))
	run, err := e.r.Start(t.Context(), Request{Prompt: "wait", Model: m, Tools: reg, Harness: e.fake,
		Session: SessionSpec{Cwd: e.cwd}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for c.N.Load() == 0 {
		time.Sleep(time.Millisecond) // the blocking tool has not started yet
	}
	if run.Steer("also this") {
		t.Error("Steer accepted a message no external engine will read")
	}
	res, _ := run.Wait()
	if res.Reason != ReasonTimeout {
		t.Fatalf("reason %s (%s), want the run timeout", res.Reason, res.Message)
	}
}

// A harness that cannot start (a preflight error) moves the turn to the
// built-in loop only when fallback is allowed; otherwise the run fails
// and says why. Nothing is mirrored or bound either way.
func TestHarnessPreflightFallback(t *testing.T) {
	e := newHarnessEnv(t)
	e.fake.Preflight = errors.New("engine not installed")
	ev := &events{}
	m := faux.New(faux.Say("from the built-in loop"), faux.Say("unused"))
	res, err := e.r.Run(t.Context(), Request{Prompt: "hi", Model: m, Harness: e.fake, HarnessFallback: true,
		Session: SessionSpec{Cwd: e.cwd}, OnEvent: ev.add})
	if err != nil || !res.OK() || m.Calls() != 1 {
		t.Fatalf("fallback: %v %+v", err, res)
	}
	if w := ev.notices(EventWarning); len(w) != 1 || !strings.Contains(w[0].Message, "engine not installed") {
		t.Errorf("warnings %+v", w)
	}
	es := e.entries(t, res.SessionID)
	if got := join(messagesOf(es)); got != "user:hi | assistant:from the built-in loop" || len(bindingsOf(es)) != 0 {
		t.Errorf("transcript %s bindings %v", got, bindingsOf(es))
	}

	res = e.run(t, "", "hi", m, nil, nil)
	if res.OK() || !strings.Contains(res.Message, "engine not installed") || m.Calls() != 1 {
		t.Errorf("without fallback: reason %s message %q calls %d", res.Reason, res.Message, m.Calls())
	}
}

// The run's budget holds on an external harness: once an attempt crossed
// it, no finalization call (nor retry) is made.
func TestHarnessBudget(t *testing.T) {
	e := newHarnessEnv(t)
	reg, _ := touchRegistry(t)
	first := faux.Call("", "touch", map[string]string{"path": "a"})
	first.Usage = &llm.Usage{Input: 1, Total: 1} // within the budget: the settled reply crosses it
	m := faux.New(first, faux.Reply().WithStop(llm.StopReasonStop), faux.Say("final"))
	res, err := e.r.Run(t.Context(), Request{Prompt: "touch a", Model: m, Tools: reg, Harness: e.fake,
		Session: SessionSpec{Cwd: e.cwd}, MaxTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonBudgetTokens || m.Calls() != 2 {
		t.Fatalf("reason %s (%s) after %d calls, want budget_tokens before the finalization call", res.Reason, res.Message, m.Calls())
	}
}

// Issue 25: a budget binds inside an external engine's turn, as the engine
// reports its usage. Crossed at the second of five native model calls, the
// turn stops there: the engine is aborted before that call's tool starts,
// the run ends with the budget's reason and message, not retried, with the
// binding and what was mirrored kept, and the usage counted once.
func TestHarnessBudgetMidTurn(t *testing.T) {
	e := newHarnessEnv(t)
	reg, c := touchRegistry(t)
	call := func() faux.Step {
		s := faux.Call("", "touch", map[string]string{"path": "a"})
		s.Usage = &llm.Usage{Input: 100, Output: 10, Total: 110}
		return s
	}
	m := faux.New(call(), call(), call(), call(), faux.Say("done"))
	res, err := e.r.Run(t.Context(), Request{Prompt: "touch a", Model: m, Tools: reg, Harness: e.fake,
		Session: SessionSpec{Cwd: e.cwd}, MaxTokens: 150})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonBudgetTokens || !strings.Contains(res.Message, "used 220 tokens, over its budget of 150 (--max-tokens)") {
		t.Fatalf("reason %s (%s), want budget_tokens at the second call", res.Reason, res.Message)
	}
	if m.Calls() != 2 || c.N.Load() != 1 || res.Retries != 0 || e.fake.Runs() != 1 {
		t.Errorf("%d model calls, %d tool runs, %d retries, %d attempts; want 2, 1, 0, 1", m.Calls(), c.N.Load(), res.Retries, e.fake.Runs())
	}
	if res.Usage.Total != 220 || res.Usage.Input != 200 {
		t.Errorf("usage %+v, want the two calls counted once", res.Usage)
	}
	es := e.entries(t, res.SessionID)
	if got := join(messagesOf(es)); got != "user:touch a | call:touch | toolResult:touched | call:touch | toolResult:aborted: the call was cancelled before it finished" {
		t.Errorf("transcript %s, want both calls with their results", got)
	}
	if b := bindingsOf(es); len(b) != 1 {
		t.Errorf("bindings %v, want the native thread kept", b)
	}
}

// Issue 25: an engine that reports each message's usage as it streams
// and its totals at the end (Claude Code: a message's output tokens are
// known only at its end) is counted once: the end adds only the rest. Cost
// is the run's model prices on the engine's tokens, its own figure only
// for a model without prices.
func TestEngineMeterCountsOnce(t *testing.T) {
	s := &run{}
	m := &engineMeter{s: s}
	m.streamed = llm.Usage{Input: 12200, Output: 1, Total: 12201}
	total := llm.Usage{Input: 12200, Output: 30, Total: 12230, Cost: llm.Cost{Total: 0.05}}
	if got := m.rest(total); got.Input != 0 || got.Output != 29 || got.Total != 29 || got.Cost.Total != 0.05 {
		t.Errorf("rest %+v, want the 29 output tokens and the engine's cost", got)
	}
	s.p.Info.Cost = llm.Prices{Input: 1, Output: 10}
	m.streamed = s.price(m.streamed)
	got := m.rest(total)
	if want := 29 * 10 / 1e6; got.Output != 29 || got.Cost.Input != 0 || got.Cost.Total < want*0.999 || got.Cost.Total > want*1.001 {
		t.Errorf("rest %+v, want the 29 output tokens at our price (%g)", got, want)
	}
}

// Issue 25: --max-cost binds mid-turn too, on the engine's tokens at the
// run's model prices (the engine reported no cost of its own here).
func TestHarnessCostBudgetMidTurn(t *testing.T) {
	e := newHarnessEnv(t)
	reg, c := touchRegistry(t)
	call := func() faux.Step {
		s := faux.Call("", "touch", map[string]string{"path": "a"})
		s.Usage = &llm.Usage{Input: 1000, Output: 100, Total: 1100}
		return s
	}
	m := faux.New(call(), call(), call(), call(), faux.Say("done"))
	info := m.ModelInfo()
	info.Cost = llm.Prices{Input: 10, Output: 50} // $0.015 a call
	res, err := e.r.Run(t.Context(), Request{Prompt: "touch a", Model: m, Info: info, Tools: reg, Harness: e.fake,
		Session: SessionSpec{Cwd: e.cwd}, MaxCost: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonBudgetCost || m.Calls() != 2 || c.N.Load() != 1 {
		t.Fatalf("reason %s (%s) after %d calls and %d tool runs, want budget_cost at the second call", res.Reason, res.Message, m.Calls(), c.N.Load())
	}
	if got := res.Usage.Cost.Total; got < 0.0299 || got > 0.0301 {
		t.Errorf("cost %g, want the two calls at the model's prices", got)
	}
}
