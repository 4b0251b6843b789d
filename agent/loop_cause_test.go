package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// A run cancelled with a cause ends with that cause in agent_end, so the
// caller can say why (a loop-guard breaker, a budget) instead of "canceled".
func TestAbortCarriesCause(t *testing.T) {
	errBudget := errors.New("budget exhausted")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	hold := make(chan struct{})
	model := faux.New(faux.Say("never finished").WithHold(hold))
	a := New(Config{Model: model})
	var end Event
	for ev, err := range a.Run(ctx, llm.UserText("go")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == EventMessageStart && ev.Message.Role == llm.RoleAssistant {
			cancel(errBudget)
		}
		if ev.Type == EventAgentEnd {
			end = ev
		}
	}
	close(hold)
	if end.Reason != ReasonAborted || !errors.Is(end.Err, errBudget) {
		t.Fatalf("agent_end reason %q err %v; want aborted with the cause", end.Reason, end.Err)
	}
}
