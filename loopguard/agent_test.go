package loopguard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/tool"
)

// loopRun runs a faux model that makes the same call n times and then
// answers, with a guard bound through agent hooks. It returns the model,
// how often the tool really ran, the run's end event and its context.
func loopRun(t *testing.T, n int, cfg *loopguard.Config) (*faux.Model, int, agent.Event, context.Context) {
	t.Helper()
	ran := 0
	probe := &tool.Func{
		ToolName:        "probe",
		ToolDescription: "Checks the thing.",
		Parameters:      []byte(`{"type":"object","properties":{"target":{"type":"string"}}}`),
		Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			ran++
			return tool.TextResult("still the same"), nil
		},
	}
	tools, err := tool.NewRegistry(probe)
	if err != nil {
		t.Fatal(err)
	}
	var steps []faux.Step
	for range n {
		steps = append(steps, faux.Call("", "probe", map[string]string{"target": "x"}))
	}
	model := faux.New(append(steps, faux.Say("I give up."))...)

	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	g := loopguard.New(cfg)
	h := g.Hooks(cancel)
	a := agent.New(agent.Config{Model: model, Tools: tools, MaxTurns: -1, Hooks: agent.Hooks{
		BeforeToolCall:    h.BeforeToolCall,
		AfterToolCall:     h.AfterToolCall,
		ToolResultPersist: h.ToolResultPersist,
	}})
	var end agent.Event
	for ev, err := range a.Run(ctx, llm.UserText("check it")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventAgentEnd {
			end = ev
		}
	}
	return model, ran, end, ctx
}

// lastToolResult is the tool result the model saw last in req.
func lastToolResult(t *testing.T, req llm.Request) llm.Message {
	t.Helper()
	m := req.Messages[len(req.Messages)-1]
	if m.Role != llm.RoleToolResult {
		t.Fatalf("last message of the request is %s, want a tool result", m.Role)
	}
	return m
}

func TestAgentRunWarnedAt10BlockedAt20(t *testing.T) {
	model, ran, end, _ := loopRun(t, 25, nil)
	if end.Reason != agent.ReasonStop {
		t.Fatalf("run ended with %q (%v), want stop", end.Reason, end.Err)
	}
	if ran != 19 {
		t.Errorf("the tool ran %d times, want 19 (calls 20 to 25 blocked)", ran)
	}
	reqs := model.Requests()
	if len(reqs) != 26 {
		t.Fatalf("%d model requests, want 26", len(reqs))
	}
	// reqs[k] is the request after the k-th call: its last message is that
	// call's result.
	for k := 1; k <= 25; k++ {
		m := lastToolResult(t, reqs[k])
		text := m.Text()
		warned := strings.Contains(text, "WARNING:")
		blocked := m.IsError && strings.Contains(text, "CRITICAL:")
		switch {
		case k < 10:
			if warned || blocked || text != "still the same" {
				t.Errorf("call %d: result %q, want the plain result", k, text)
			}
		case k < 20:
			if !warned || blocked || !strings.HasPrefix(text, "still the same") {
				t.Errorf("call %d: result %q, want the result with a warning", k, text)
			}
			if k == 10 && !strings.Contains(text, "call 10 of probe") {
				t.Errorf("call 10: warning %q does not say it is the 10th call", text)
			}
		default:
			if !blocked || strings.Contains(text, "still the same") {
				t.Errorf("call %d: result %q (isError %v), want a block", k, text, m.IsError)
			}
			if k == 20 && !strings.Contains(text, "call 20 of probe") {
				t.Errorf("call 20: block %q does not say it is the 20th call", text)
			}
		}
	}
}

func TestAgentRunStoppedByBreaker(t *testing.T) {
	var stops int
	cfg := &loopguard.Config{OnEvent: func(e loopguard.Event) {
		if e.Kind == loopguard.EventStop {
			stops++
		}
	}}
	model, ran, end, ctx := loopRun(t, 40, cfg)
	if end.Reason != agent.ReasonAborted {
		t.Fatalf("run ended with %q, want aborted by the breaker", end.Reason)
	}
	cause := context.Cause(ctx)
	var se *loopguard.StopError
	if !errors.Is(cause, loopguard.ErrCircuitBreaker) || !errors.As(cause, &se) || se.Count != 30 {
		t.Fatalf("context cause = %v, want the breaker's StopError at the 30th call", cause)
	}
	if ran != 19 || stops != 1 {
		t.Errorf("tool ran %d times, %d stop events; want 19 and 1", ran, stops)
	}
	if got := len(model.Requests()); got != 30 {
		t.Errorf("%d model requests, want 30 (no request after the breaker)", got)
	}
	// The refused 30th call is still answered in the transcript.
	var last llm.Message
	for _, m := range end.Messages {
		if m.Role == llm.RoleToolResult {
			last = m
		}
	}
	if !last.IsError || !strings.Contains(last.Text(), "circuit breaker") {
		t.Errorf("last tool result = %q, want the breaker's refusal", last.Text())
	}
}
