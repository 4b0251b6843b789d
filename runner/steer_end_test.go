package runner_test

import (
	"slices"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
)

// injectAt starts a run whose OnEvent calls inject (Steer or FollowUp) at
// the first event of type at, and returns what inject reported and the
// run's messages.
func injectAt(t *testing.T, at agent.EventType, inject func(h *runner.Run) bool) (bool, []string) {
	t.Helper()
	r := newRunner(t, runner.Config{})
	ready := make(chan *runner.Run, 1)
	var got, called bool
	h, err := r.Start(t.Context(), runner.Request{Prompt: "go", Model: faux.New(faux.Say("one"), faux.Say("two")),
		OnEvent: func(ev runner.Event) {
			if ev.Type != at || called {
				return
			}
			called = true
			h := <-ready
			ready <- h
			got = inject(h)
		}})
	if err != nil {
		t.Fatal(err)
	}
	ready <- h
	res, err := h.Wait()
	if err != nil || !res.OK() {
		t.Fatalf("%v %+v", err, res)
	}
	if !called {
		t.Fatalf("no %s event", at)
	}
	var texts []string
	for _, m := range res.Messages {
		texts = append(texts, m.Text())
	}
	return got, texts
}

// Steer and FollowUp report false once the agent loop has stopped taking
// messages (at agent_end, at run_end): the message would be lost.
func TestSteerAndFollowUpAtTheEndReportFalse(t *testing.T) {
	for _, at := range []agent.EventType{agent.EventAgentEnd, runner.EventRunEnd} {
		for name, inject := range map[string]func(*runner.Run) bool{
			"steer":     func(h *runner.Run) bool { return h.Steer("late") },
			"follow-up": func(h *runner.Run) bool { return h.FollowUp("late") },
		} {
			t.Run(string(at)+"/"+name, func(t *testing.T) {
				ok, texts := injectAt(t, at, inject)
				if ok {
					t.Errorf("%s at %s reported true; messages %q", name, at, texts)
				}
				if slices.Contains(texts, "late") {
					t.Errorf("refused message delivered: %q", texts)
				}
			})
		}
	}
}

// A steer during a running turn is taken and answered.
func TestSteerDuringATurnIsDelivered(t *testing.T) {
	ok, texts := injectAt(t, agent.EventTurnStart, func(h *runner.Run) bool { return h.Steer("more") })
	if !ok {
		t.Fatal("steer during a turn refused")
	}
	if !slices.Contains(texts, "more") || texts[len(texts)-1] != "two" {
		t.Errorf("messages %q, want the steer answered", texts)
	}
}
