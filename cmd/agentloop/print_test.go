package main

import (
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
)

// The text display never shows a withdrawn or retried reply twice: what it
// showed stays, and the new reply prints only where it goes further.
func TestPrinterWithdrawnReply(t *testing.T) {
	assistant := &llm.Message{Role: llm.RoleAssistant}
	ag := func(e agent.Event) runner.Event { return runner.Event{Type: e.Type, Agent: &e} }
	delta := func(s string) runner.Event {
		return ag(agent.Event{Type: agent.EventMessageUpdate, LLM: &llm.Event{Type: llm.EventTextDelta, Delta: s}})
	}
	end := func(text string, r llm.StopReason) runner.Event {
		return ag(agent.Event{Type: agent.EventMessageEnd, Message: &llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(text)}, StopReason: r}})
	}
	tests := []struct {
		name   string
		events []runner.Event
		stdout string
	}{
		{"cut off and asked again", []runner.Event{
			ag(agent.Event{Type: agent.EventMessageStart, Message: assistant}), delta("Part "), delta("one"),
			ag(agent.Event{Type: agent.EventRetryReset}),
			ag(agent.Event{Type: agent.EventMessageStart, Message: assistant}), delta("Part one"), delta(" and two."), end("Part one and two.", llm.StopReasonStop),
		}, "Part one and two.\n"},
		{"thinking tags split across deltas", []runner.Event{
			ag(agent.Event{Type: agent.EventMessageStart, Message: assistant}), delta("<thi"), delta("nk>hmm</think>Hi"), end("<think>hmm</think>Hi", llm.StopReasonStop),
		}, "Hi\n"},
		{"a retry that repeats more than was shown", []runner.Event{
			ag(agent.Event{Type: agent.EventMessageStart, Message: assistant}), delta("Hel"), end("Hel", llm.StopReasonError),
			{Type: runner.EventRetry, Notice: &runner.Notice{Message: "retrying", Streamed: true}},
			ag(agent.Event{Type: agent.EventMessageStart, Message: assistant}), delta("He"), delta("llo"), end("Hello", llm.StopReasonStop),
		}, "Hello\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, out, _ := testEnv(t.TempDir(), "")
			p := newPrinter(env, false, llm.ModelInfo{})
			for _, ev := range tc.events {
				p.event(ev)
			}
			p.finish(runner.Result{})
			if out.String() != tc.stdout {
				t.Errorf("stdout %q, want %q", out.String(), tc.stdout)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\n  b\tc", 10, "a b c"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is two bytes: never cut in half
		{"日本語", 4, "日…"},
	}
	for _, tc := range tests {
		if got := oneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestWithProviderDetail(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		pe   *llm.ProviderError
		want string
	}{
		{"detail added", "Rate limited.", &llm.ProviderError{Provider: "openai", Message: "slow down"}, "Rate limited. (openai: slow down)"},
		{"nothing said", "Rate limited.", &llm.ProviderError{Provider: "openai"}, "Rate limited."},
		{"already quoted", "Rate limited. (openai: slow down)", &llm.ProviderError{Provider: "openai", Message: "slow down"}, "Rate limited. (openai: slow down)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := withProviderDetail(tc.msg, tc.pe); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
