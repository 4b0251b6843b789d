package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// The bus's seams are the agent's hooks: one type, handed over whole, with
// no copy that could forget a seam.
func TestBusSeamsAreAgentHooks(t *testing.T) {
	bus := hook.New(nil)
	var outputs, ends atomic.Int32
	bus.OnLLMOutput(hook.Spec{Name: "count"}, func(context.Context, hook.LLMOutputEvent) error { outputs.Add(1); return nil })
	bus.OnAgentEnd(hook.Spec{Name: "end"}, func(context.Context, hook.AgentEndEvent) error { ends.Add(1); return nil })
	var hooks agent.Hooks = bus.Seams(hook.SeamsOptions{})
	a := agent.New(agent.Config{Model: faux.New(faux.Say("hi")), Hooks: hooks})
	for _, err := range a.Run(context.Background(), llm.UserText("hello")) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := bus.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if outputs.Load() != 1 || ends.Load() != 1 {
		t.Errorf("llm_output fired %d times, agent_end %d; want once each", outputs.Load(), ends.Load())
	}
}
