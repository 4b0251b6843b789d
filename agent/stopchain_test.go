package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

func cut(text string) faux.Step { return faux.Say(text).WithStop(llm.StopReasonLength) }

func ofType(evs []Event, typ EventType) []Event {
	var out []Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func continuationReasons(evs []Event) []string {
	var out []string
	for _, e := range ofType(evs, EventStopContinuation) {
		out = append(out, e.Reason)
	}
	return out
}

// assistantTexts lists the assistant messages of the conversation.
func assistantTexts(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant {
			out = append(out, m.Text())
		}
	}
	return out
}

// A reply cut off at its output limit is withdrawn and asked again with the
// limit raised; cut again, it is kept and continued, at most 3 times.
func TestMaxTokensRaiseThenContinue(t *testing.T) {
	m := faux.New(cut("first, cut"), cut("raised, still cut"), cut("cont 1"), cut("cont 2"), cut("cont 3"), faux.Say("never asked"))
	a := New(Config{Model: m, Options: llm.Options{MaxTokens: 4096}, MaxOutputTokens: 128_000})
	evs := runAll(t, a, context.Background(), llm.UserText("write a long essay"))

	if m.Calls() != 5 {
		t.Fatalf("calls = %d, want 5 (cut, raised, 3 continuations)", m.Calls())
	}
	reqs := m.Requests()
	if got := []int{reqs[0].Options.MaxTokens, reqs[1].Options.MaxTokens, reqs[4].Options.MaxTokens}; !slices.Equal(got, []int{4096, EscalatedMaxTokens, EscalatedMaxTokens}) {
		t.Errorf("max tokens per call = %v, want 4096 then %d", got, EscalatedMaxTokens)
	}
	if n := len(reqs[1].Messages); n != 1 {
		t.Errorf("the raised call sent %d messages, want only the prompt (the cut partial discarded)", n)
	}
	resets := ofType(evs, EventRetryReset)
	if len(resets) != 1 || resets[0].Message.Text() != "first, cut" || resets[0].Reason != ContinueMaxTokens || resets[0].Usage == nil {
		t.Fatalf("retry_reset events = %+v", resets)
	}
	if resets[0].MaxTokens != EscalatedMaxTokens {
		t.Errorf("retry_reset MaxTokens %d, want %d", resets[0].MaxTokens, EscalatedMaxTokens)
	}
	for _, e := range ofType(evs, EventMessageEnd) {
		if e.Message.Text() == "first, cut" {
			t.Error("the withdrawn partial reached message_end")
		}
	}
	if got := assistantTexts(a.Messages()); !slices.Equal(got, []string{"raised, still cut", "cont 1", "cont 2", "cont 3"}) {
		t.Errorf("kept replies = %q", got)
	}
	msgs := a.Messages()
	if p := msgs[2]; p.Role != llm.RoleUser || p.Text() != ContinuationPrompt {
		t.Errorf("after the kept cut-off reply: %+v, want the continuation prompt", p)
	}
	if got := continuationReasons(evs); !slices.Equal(got, []string{ContinueMaxTokens, ContinueMaxTokens, ContinueMaxTokens}) {
		t.Errorf("continuations = %v", got)
	}
	end := last(evs)
	if end.Reason != ReasonStop || end.StopReason != llm.StopReasonLength {
		t.Errorf("end %s/%s", end.Reason, end.StopReason)
	}
	// The withdrawn call was paid for: its usage is in the run's.
	var sum int
	for _, e := range ofType(evs, EventTurnEnd) {
		sum += e.Message.Usage.Output
	}
	if end.Usage.Output != sum || len(ofType(evs, EventTurnEnd)) != 5 {
		t.Errorf("run usage %d, turns' %d", end.Usage.Output, sum)
	}
}

func TestMaxTokensBranches(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		steps     []faux.Step
		wantCalls int
		resets    int
		conts     int
		wantKept  []string
	}{
		{"model limit unknown: continue at once", Config{Options: llm.Options{MaxTokens: 1000}},
			[]faux.Step{cut("a"), faux.Say("b")}, 2, 0, 1, []string{"a", "b"}},
		{"limit left to the wire: continue at once", Config{MaxOutputTokens: 8000},
			[]faux.Step{cut("a"), faux.Say("b")}, 2, 0, 1, []string{"a", "b"}},
		{"already at the limit", Config{Options: llm.Options{MaxTokens: 8000}, MaxOutputTokens: 8000},
			[]faux.Step{cut("a"), faux.Say("b")}, 2, 0, 1, []string{"a", "b"}},
		{"raised reply completes", Config{Options: llm.Options{MaxTokens: 1000}, MaxOutputTokens: 8000},
			[]faux.Step{cut("a"), faux.Say("whole")}, 2, 1, 0, []string{"whole"}},
		{"continuations off", Config{Options: llm.Options{MaxTokens: 1000}, MaxOutputContinuations: -1},
			[]faux.Step{cut("a"), faux.Say("b")}, 1, 0, 0, []string{"a"}},
		{"custom bound", Config{MaxOutputContinuations: 1},
			[]faux.Step{cut("a"), cut("b"), faux.Say("c")}, 2, 0, 1, []string{"a", "b"}},
		{"a cut-off reply with a call is answered, not withdrawn", Config{Options: llm.Options{MaxTokens: 1000}, MaxOutputTokens: 8000},
			[]faux.Step{faux.Reply(tc("c", "t", nil)).WithStop(llm.StopReasonLength), faux.Say("done")}, 2, 0, 0, []string{"", "done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := faux.New(tt.steps...)
			cfg := tt.cfg
			cfg.Model = m
			cfg.Tools = registry(t, textTool("t", true, "ok"))
			a := New(cfg)
			evs := runAll(t, a, context.Background(), llm.UserText("go"))
			if m.Calls() != tt.wantCalls || len(ofType(evs, EventRetryReset)) != tt.resets || len(ofType(evs, EventStopContinuation)) != tt.conts {
				t.Errorf("calls %d resets %d continuations %d, want %d %d %d", m.Calls(), len(ofType(evs, EventRetryReset)),
					len(ofType(evs, EventStopContinuation)), tt.wantCalls, tt.resets, tt.conts)
			}
			if got := assistantTexts(a.Messages()); !slices.Equal(got, tt.wantKept) {
				t.Errorf("kept %q, want %q", got, tt.wantKept)
			}
			checkPairing(t, a.Messages())
		})
	}
}

// A Stop hook that blocks once: the run goes on with its message, then
// ends when the hook lets it.
func TestStopHookBlocksOnce(t *testing.T) {
	m := faux.New(faux.Say("done"), faux.Say("tests pass, done"))
	calls := 0
	a := New(Config{Model: m, Hooks: Hooks{Stop: func(_ context.Context, last llm.Message) (bool, []llm.Message) {
		calls++
		if calls == 1 {
			return true, []llm.Message{llm.UserText("run the tests before stopping")}
		}
		return false, nil
	}}})
	evs := runAll(t, a, context.Background(), llm.UserText("fix it"))
	if m.Calls() != 2 || calls != 2 || last(evs).Reason != ReasonStop {
		t.Fatalf("model calls %d, hook calls %d, end %s", m.Calls(), calls, last(evs).Reason)
	}
	if req := m.Requests()[1].Messages; req[len(req)-1].Text() != "run the tests before stopping" {
		t.Errorf("second call ended with %q", req[len(req)-1].Text())
	}
	if got := continuationReasons(evs); !slices.Equal(got, []string{ContinueStopHook}) {
		t.Errorf("continuations = %v", got)
	}
}

func TestBeforeFinalize(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		revise    func(n int) string
		wantCalls int
	}{
		{"revise once", 0, func(n int) string {
			if n == 1 {
				return "  add a one-line summary at the end  "
			}
			return ""
		}, 2},
		{"blank is finalize", 0, func(int) string { return " \n" }, 1},
		{"bounded", 2, func(int) string { return "again" }, 3},
		{"default bound", 0, func(int) string { return "again" }, 1 + DefaultMaxFinalizeRevisions},
		{"never", -1, func(int) string { return "again" }, 1},
		{"panicking hook finalizes", 0, func(int) string { panic("broken hook") }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := faux.New(faux.Say("answer"))
			m.Repeat = true
			n := 0
			a := New(Config{Model: m, MaxFinalizeRevisions: tt.max, Hooks: Hooks{
				Stop: func(context.Context, llm.Message) (bool, []llm.Message) { return false, nil },
				BeforeFinalize: func(context.Context, llm.Message) string {
					n++
					return tt.revise(n)
				}}})
			evs := runAll(t, a, context.Background(), llm.UserText("go"))
			if m.Calls() != tt.wantCalls || last(evs).Reason != ReasonStop {
				t.Fatalf("calls %d, want %d", m.Calls(), tt.wantCalls)
			}
			if tt.name == "revise once" {
				req := m.Requests()[1].Messages
				if got := req[len(req)-1].Text(); got != "add a one-line summary at the end" {
					t.Errorf("revision sent as %q", got)
				}
			}
			if got := len(ofType(evs, EventStopContinuation)); got != tt.wantCalls-1 {
				t.Errorf("%d stop_continuation events, want %d", got, tt.wantCalls-1)
			}
		})
	}
}

func TestTokenBudget(t *testing.T) {
	say := func(out int) faux.Step {
		s := faux.Say("some work")
		s.Usage = &llm.Usage{Input: 10, Output: out, Total: 10 + out}
		return s
	}
	tests := []struct {
		name      string
		budget    int
		out       int
		wantCalls int
	}{
		{"keeps going under 90%", 5000, 1000, 5},
		{"stops at 90%", 1000, 950, 1},
		{"diminishing returns", 100_000, 100, 4},
		{"no budget", 0, 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := faux.New(say(tt.out))
			m.Repeat = true
			a := New(Config{Model: m, TokenBudget: tt.budget})
			evs := runAll(t, a, context.Background(), llm.UserText("go"))
			if m.Calls() != tt.wantCalls {
				t.Errorf("calls %d, want %d", m.Calls(), tt.wantCalls)
			}
			for _, r := range continuationReasons(evs) {
				if r != ContinueTokenBudget {
					t.Errorf("continuation %s", r)
				}
			}
			if tt.wantCalls > 1 {
				req := m.Requests()[1].Messages
				if got := req[len(req)-1].Text(); !strings.Contains(got, "output token target") {
					t.Errorf("budget nudge %q", got)
				}
			}
		})
	}
}

// The order of the chain: steering and follow-ups first, then the Stop
// hook, then the budget, then BeforeFinalize.
func TestStopChainOrder(t *testing.T) {
	m := faux.New(faux.Say("answer"))
	m.Repeat = true
	var order []string
	stops, finals := 0, 0
	var a *Agent
	a = New(Config{Model: m, Hooks: Hooks{
		Stop: func(context.Context, llm.Message) (bool, []llm.Message) {
			stops++
			order = append(order, "stop")
			if stops == 1 {
				a.FollowUp(llm.UserText("follow-up"))
				return false, nil
			}
			return stops == 2, nil
		},
		BeforeFinalize: func(context.Context, llm.Message) string {
			finals++
			order = append(order, "finalize")
			if finals == 1 {
				return "revise"
			}
			return ""
		}}})
	evs := runAll(t, a, context.Background(), llm.UserText("go"))
	want := []string{"stop", "finalize", "stop", "stop", "finalize"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if got := continuationReasons(evs); !slices.Equal(got, []string{ContinueRevision, ContinueStopHook}) {
		t.Errorf("continuations %v", got)
	}
}
