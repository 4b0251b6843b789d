package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// events records a run's events.
type events struct {
	mu  sync.Mutex
	evs []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

func (e *events) notices(t agent.EventType) []Notice {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Notice
	for _, ev := range e.evs {
		if ev.Type == t && ev.Notice != nil {
			out = append(out, *ev.Notice)
		}
	}
	return out
}

func (e *events) ends() []Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Result
	for _, ev := range e.evs {
		if ev.Type == EventRunEnd && ev.End != nil {
			out = append(out, *ev.End)
		}
	}
	return out
}

func (e *events) types() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.evs {
		switch ev.Type {
		case agent.EventMessageUpdate, agent.EventMessageStart, agent.EventTurnStart, agent.EventTurnEnd:
			continue
		}
		out = append(out, string(ev.Type))
	}
	return out
}

// fakeCompactor counts recoveries and changes nothing.
type fakeCompactor struct {
	mu       sync.Mutex
	recovers int
	err      error
	// removesNothing makes Recover hand back the history unchanged, like a
	// compactor that finds nothing to remove; otherwise it "compacts" the
	// history away (the runner checks that the prompt got smaller).
	removesNothing bool
}

func (f *fakeCompactor) TransformContext(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	return msgs, nil
}
func (f *fakeCompactor) PersistToolResult(_ context.Context, _ tool.Call, res tool.Result) tool.Result {
	return res
}
func (f *fakeCompactor) Recover(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recovers++
	if f.removesNothing {
		return msgs, f.err
	}
	return nil, f.err
}

func noJitter() *RetryPolicy { return &RetryPolicy{Jitter: func() float64 { return 0 }} }

func refuse(r llm.Reason, status int) faux.Step { return faux.Refuse(r, status, "scripted "+string(r)) }

// bigHistory is a conversation with one large tool result.
func bigHistory() []llm.Message {
	call := llm.ToolCall("c1", "read", json.RawMessage(`{"path":"big.txt"}`))
	return []llm.Message{
		llm.UserText("read big.txt"),
		{Role: llm.RoleAssistant, Content: []llm.Content{call}, StopReason: llm.StopReasonToolUse},
		tool.TextResult(strings.Repeat("line of text\n", 5000)).Message("c1", "read"),
		{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("It is long.")}, StopReason: llm.StopReasonStop},
	}
}

func TestRunCascade(t *testing.T) {
	tests := []struct {
		name      string
		steps     []faux.Step
		window    int
		history   []llm.Message
		reason    string
		calls     int
		recovers  int
		notices   map[agent.EventType]int
		msg       string
		wantDelay []int64
	}{
		{name: "success", steps: []faux.Step{faux.Say("hi")}, reason: "stop", calls: 1},
		{name: "overflow, compact, retry", steps: []faux.Step{refuse(llm.ReasonContextOverflow, 400), faux.Say("fits now")},
			reason: "stop", calls: 2, recovers: 1, notices: map[agent.EventType]int{EventCompactionRetry: 1}},
		{name: "overflow four times, truncation, user error", history: bigHistory(), steps: []faux.Step{
			refuse(llm.ReasonContextOverflow, 400), refuse(llm.ReasonContextOverflow, 400), refuse(llm.ReasonContextOverflow, 400),
			refuse(llm.ReasonContextOverflow, 400), refuse(llm.ReasonContextOverflow, 400)},
			reason: "context_overflow", calls: 5, recovers: 3, msg: "new session",
			notices: map[agent.EventType]int{EventCompactionRetry: 3, EventTruncationRetry: 1}},
		{name: "overflow with nothing to truncate fails after compaction", steps: []faux.Step{
			refuse(llm.ReasonContextOverflow, 400), refuse(llm.ReasonContextOverflow, 400), refuse(llm.ReasonContextOverflow, 400),
			refuse(llm.ReasonContextOverflow, 400)},
			reason: "context_overflow", calls: 4, recovers: 3, notices: map[agent.EventType]int{EventCompactionRetry: 3, EventTruncationRetry: 0}},
		{name: "timeout with a big prompt compacts", window: 20_000, history: bigHistory(), steps: []faux.Step{refuse(llm.ReasonTimeout, 0), faux.Say("ok")},
			reason: "stop", calls: 2, recovers: 1, notices: map[agent.EventType]int{EventTimeoutCompaction: 1, EventRetry: 0}},
		{name: "timeout with a small prompt retries", history: bigHistory(), steps: []faux.Step{refuse(llm.ReasonTimeout, 0), faux.Say("ok")},
			reason: "stop", calls: 2, recovers: 0, notices: map[agent.EventType]int{EventTimeoutCompaction: 0, EventRetry: 1}, wantDelay: []int64{2000}},
		{name: "529 twice then success", steps: []faux.Step{refuse(llm.ReasonOverloaded, 529), refuse(llm.ReasonOverloaded, 529), faux.Say("ok")},
			reason: "stop", calls: 3, notices: map[agent.EventType]int{EventRetry: 2}, wantDelay: []int64{2000, 4000}},
		{name: "overloaded mid-stream after text", steps: []faux.Step{faux.Say("partial answer").WithError(faux.Failure{Reason: llm.ReasonOverloaded, Status: 529}), faux.Say("whole answer")},
			reason: "stop", calls: 2, notices: map[agent.EventType]int{EventRetry: 1}, wantDelay: []int64{2000}},
		{name: "retries give up after 3", steps: []faux.Step{refuse(llm.ReasonServer, 500), refuse(llm.ReasonServer, 500), refuse(llm.ReasonServer, 500), refuse(llm.ReasonServer, 500)},
			reason: "server", calls: 4, msg: "gave up after 3 retries", wantDelay: []int64{2000, 4000, 8000}},
		{name: "non-transient ends at once", steps: []faux.Step{refuse(llm.ReasonAuth, 401)},
			reason: "auth", calls: 1, msg: llm.ReasonAuth.UserMessage()},
		{name: "Retry-After over 60 s is not waited", steps: []faux.Step{{Err: &faux.Failure{Reason: llm.ReasonRateLimit, Status: 429, RetryAfter: 2 * time.Minute, BeforeStart: true}}},
			reason: "rate_limit", calls: 1, msg: "asked to wait 2m0s"},
		{name: "429 honours Retry-After", steps: []faux.Step{{Err: &faux.Failure{Reason: llm.ReasonRateLimit, Status: 429, RetryAfter: 7 * time.Second, BeforeStart: true}}, faux.Say("ok")},
			reason: "stop", calls: 2, wantDelay: []int64{7000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := faux.New(tc.steps...)
				fc := &fakeCompactor{}
				ev := &events{}
				start := time.Now()
				res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m, History: tc.history, Info: llm.ModelInfo{ContextWindow: tc.window},
					Compaction: &CompactionSpec{Compactor: fc}, Retry: noJitter(), OnEvent: ev.add})
				if err != nil {
					t.Fatal(err)
				}
				if res.Reason != tc.reason {
					t.Fatalf("reason %q (%v), want %q; events %v", res.Reason, res.Err, tc.reason, ev.types())
				}
				if m.Calls() != tc.calls {
					t.Errorf("model called %d times, want %d", m.Calls(), tc.calls)
				}
				if res.Compactions != tc.recovers {
					t.Errorf("result counts %d compactions, want %d", res.Compactions, tc.recovers)
				}
				if fc.recovers != tc.recovers {
					t.Errorf("compacted %d times, want %d", fc.recovers, tc.recovers)
				}
				for typ, n := range tc.notices {
					if got := len(ev.notices(typ)); got != n {
						t.Errorf("%d %s events, want %d", got, typ, n)
					}
				}
				if !strings.Contains(res.Message, tc.msg) {
					t.Errorf("message %q lacks %q", res.Message, tc.msg)
				}
				var total int64
				retries := ev.notices(EventRetry)
				for i, want := range tc.wantDelay {
					if i >= len(retries) || retries[i].Delay.Milliseconds() != want {
						t.Fatalf("retry delays %+v, want %v", retries, tc.wantDelay)
					}
					total += want
				}
				if res.Reason == "stop" && time.Since(start) != time.Duration(total)*time.Millisecond {
					t.Errorf("the run took %s of fake time, want the %d ms of its waits", time.Since(start), total)
				}
				if ends := ev.ends(); len(ends) != 1 || ends[0].Reason != tc.reason {
					t.Errorf("run_end events %+v", ends)
				}
				// Failed replies are never left in the conversation.
				for _, msg := range res.Messages {
					if msg.Role == llm.RoleAssistant && msg.StopReason.Failed() && res.Reason == "stop" {
						t.Errorf("a failed reply was kept: %+v", msg)
					}
				}
			})
		})
	}
}

func TestRunStreamedRetryIsVisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := faux.New(faux.Say("partial").WithError(faux.Failure{Reason: llm.ReasonOverloaded, Status: 529}), faux.Say("done"))
		ev := &events{}
		res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m, Retry: noJitter(), OnEvent: ev.add})
		if err != nil || !res.OK() {
			t.Fatalf("run: %v %+v", err, res)
		}
		r := ev.notices(EventRetry)
		if len(r) != 1 || !r[0].Streamed || r[0].Reason != "overloaded" {
			t.Fatalf("retry events %+v, want one marked streamed", r)
		}
		if len(res.Messages) != 2 || res.Messages[1].Text() != "done" {
			t.Errorf("messages %+v", res.Messages)
		}
	})
}

func TestRunIterationCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := faux.New(refuse(llm.ReasonOverloaded, 529))
		m.Repeat = true
		res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m, Timeout: -1,
			Retry: &RetryPolicy{Attempts: 1000, Jitter: func() float64 { return 0 }}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != ReasonRetryLimit || m.Calls() != 32 || res.Attempts != 32 {
			t.Fatalf("reason %s after %d calls (%d attempts), want retry_limit after 32", res.Reason, m.Calls(), res.Attempts)
		}
		if res.Message != retryLimitUserMessage {
			t.Errorf("message %q", res.Message)
		}
	})
}

func TestRunBudgets(t *testing.T) {
	usage := &llm.Usage{Input: 600, Output: 100, Cost: llm.Cost{Total: 0.02}}
	loop := func() *faux.Model {
		s := faux.Call("", "noop", map[string]any{})
		s.Usage = usage
		m := faux.New(s)
		m.Repeat = true
		return m
	}
	noop, _ := tool.NewRegistry(&tool.Func{ToolName: "noop", Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult("ok"), nil
	}})
	tests := []struct {
		name   string
		p      params
		reason string
		calls  int
	}{
		{"cost", params{MaxCost: 0.05}, ReasonBudgetCost, 3},
		{"tokens", params{MaxTokens: 1500}, ReasonBudgetTokens, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			m := loop()
			p.Prompt, p.Model, p.Tools = "go", m, noop
			p.LoopGuard = nil
			res, err := testRunner(nil).runParams(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason || !errors.Is(res.Err, ErrBudget) || m.Calls() != tc.calls {
				t.Fatalf("reason %s (%v) after %d calls, want %s after %d", res.Reason, res.Err, m.Calls(), tc.reason, tc.calls)
			}
			if err := session.CheckPairing(res.Messages); err != nil {
				t.Errorf("pairing: %v", err)
			}
		})
	}
	// A final answer that crosses the budget is kept: the run succeeds with
	// a warning. Were the model called again (a Stop hook insisting), the
	// run stops before that call.
	for _, insist := range []bool{false, true} {
		t.Run(fmt.Sprintf("final reply, stop hook insists=%v", insist), func(t *testing.T) {
			s := faux.Say("the answer")
			s.Usage = usage
			m := faux.New(s)
			m.Repeat = true
			p := params{Prompt: "go", Model: m, MaxCost: 0.01, RegisterHooks: func(b *hook.Bus) {
				b.OnStop(hook.Spec{Name: "insist"}, func(context.Context, hook.StopInput) (hook.StopOutput, error) {
					return hook.StopOutput{Continue: insist, Reason: "say more"}, nil
				})
			}}
			res, err := testRunner(nil).runParams(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			if m.Calls() != 1 {
				t.Errorf("%d model calls after the budget was crossed, want 1", m.Calls())
			}
			warned := false
			for _, w := range res.Warnings {
				warned = warned || strings.Contains(w, "final reply")
			}
			switch {
			case !warned:
				t.Errorf("no warning about the crossed budget: %q", res.Warnings)
			case !insist && !res.OK():
				t.Errorf("a final answer over budget failed the run: %s (%v)", res.Reason, res.Err)
			case insist && (res.Reason != ReasonBudgetCost || !errors.Is(res.Err, ErrBudget)):
				t.Errorf("reason %s (%v), want the cost budget before the second call", res.Reason, res.Err)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			hold := make(chan struct{})
			defer close(hold)
			m := faux.New(faux.Say("slow").WithHold(hold))
			res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != ReasonTimeout || !errors.Is(res.Err, ErrRunTimeout) {
				t.Fatalf("reason %s (%v), want timeout", res.Reason, res.Err)
			}
		})
	})
}

func TestRunTimeoutExtendedDuringCompaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newRun(nil, params{Timeout: 10 * time.Second, CompactionTimeout: 20 * time.Second}, clock.Real{})
		ev := &events{}
		s.p.OnEvent = ev.add
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		s.compacting.Store(true)
		stop := s.startTimer(cancel)
		defer stop()
		time.Sleep(15 * time.Second)
		if ctx.Err() != nil || len(ev.notices(EventTimeoutExtended)) != 1 {
			t.Fatalf("the timeout was not extended: %v", context.Cause(ctx))
		}
		time.Sleep(20 * time.Second)
		if !errors.Is(context.Cause(ctx), ErrRunTimeout) {
			t.Fatalf("the extension is granted once: cause %v", context.Cause(ctx))
		}
	})
}

// The precheck's truncation-only route shortens tool results before the
// call; the runner counts it as a fresh attempt, and the call succeeds.
func TestRunPrecheckTruncationIsAnAttempt(t *testing.T) {
	call := llm.ToolCall("c1", "read", json.RawMessage(`{"path":"a"}`))
	call2 := llm.ToolCall("c2", "read", json.RawMessage(`{"path":"b"}`))
	history := []llm.Message{
		llm.UserText("read a and b"),
		{Role: llm.RoleAssistant, Content: []llm.Content{call, call2}, StopReason: llm.StopReasonToolUse},
		tool.TextResult(strings.Repeat("a", 30_000)).Message("c1", "read"),
		tool.TextResult(strings.Repeat("b", 30_000)).Message("c2", "read"),
	}
	m := faux.New(faux.Say("both read"))
	m.Info.ContextWindow = 32_000
	ev := &events{}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "summarise", Model: m, Info: m.ModelInfo(), History: history, OnEvent: ev.add})
	if err != nil || !res.OK() {
		t.Fatalf("%v %+v", err, res)
	}
	if n := len(ev.notices(EventPrecheckTruncation)); n != 1 || res.Attempts != 2 || m.Calls() != 1 {
		t.Fatalf("%d precheck truncations, %d attempts, %d calls; want 1, 2, 1; events %v", n, res.Attempts, m.Calls(), ev.types())
	}
	sent := m.Requests()[0].Messages
	if got := len(sent[2].Text()) + len(sent[3].Text()); got >= 60_000 {
		t.Errorf("the results were not shortened: %d chars sent", got)
	}
}

// A provider that refuses the thinking level gets the call again at a
// level it lists; the retry is an event.
func TestRunThinkingFallback(t *testing.T) {
	m := faux.New(faux.Refuse(llm.ReasonFormat, 400, `reasoning effort "xhigh" is not supported by this model. Supported values are: "low", "medium"`), faux.Say("ok"))
	ev := &events{}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "think", Model: m, Options: llm.Options{Thinking: llm.ThinkingXHigh}, OnEvent: ev.add})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || reqs[0].Options.Thinking != llm.ThinkingXHigh || reqs[1].Options.Thinking != llm.ThinkingLow {
		t.Fatalf("thinking levels sent: %v", reqs)
	}
	if n := ev.notices(EventThinkingFallback); len(n) != 1 || n[0].Reason != "low" {
		t.Errorf("fallback events %+v", n)
	}
}

// A provider that refuses a prompt the compactor cannot make smaller (the
// model's real window is below what we believe) does not get the same
// prompt three more times: the cascade moves on to its user error.
func TestRunOverflowNothingRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := faux.New(refuse(llm.ReasonContextOverflow, 400), refuse(llm.ReasonContextOverflow, 400),
			refuse(llm.ReasonContextOverflow, 400), refuse(llm.ReasonContextOverflow, 400))
		fc := &fakeCompactor{removesNothing: true}
		ev := &events{}
		res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m,
			Compaction: &CompactionSpec{Compactor: fc}, Retry: noJitter(), OnEvent: ev.add})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != string(llm.ReasonContextOverflow) || m.Calls() != 1 || fc.recovers != 1 {
			t.Errorf("reason %s after %d model calls and %d compactions; want context_overflow after 1 and 1", res.Reason, m.Calls(), fc.recovers)
		}
		if res.Compactions != 0 {
			t.Errorf("a compaction that removed nothing was counted: %d", res.Compactions)
		}
	})
}
