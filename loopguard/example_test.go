package loopguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"

	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/tool"
)

// A model that keeps making the same call is warned, then refused, then
// stopped. (Thresholds lowered from 10/20/30 to keep the output short.)
func Example() {
	g := loopguard.New(&loopguard.Config{Warning: 2, Critical: 3, Global: 4})
	for i := 1; i <= 4; i++ {
		call := tool.Call{ID: fmt.Sprint("call-", i), Name: "read", Args: json.RawMessage(`{"path":"notes.txt"}`)}
		v := g.Before(call)
		res := tool.TextResult("unchanged")
		if v.Result != nil {
			res = *v.Result // refused: the model gets this error result instead
		}
		g.After(call, res)
		res = g.Annotate(call, res) // appends a warning, if there is one
		fmt.Printf("call %d: %s, %d block(s), error %v\n", i, v.Action, len(res.Content), res.IsError)
		if v.Action == loopguard.Stop {
			fmt.Println(v.Err)
		}
	}
	// Output:
	// call 1: allow, 1 block(s), error false
	// call 2: warn, 2 block(s), error false
	// call 3: block, 1 block(s), error true
	// call 4: stop, 1 block(s), error true
	// loopguard: run stopped: CRITICAL: read has made no progress 4 times in a row: the same arguments gave the same result (or were blocked) each time. The global circuit breaker stopped the run to prevent a runaway loop.
}

// Binding a guard to an agent: the hooks go into agent.Hooks, and the
// run's context is cancelled with the breaker's *StopError when it trips.
func ExampleGuard_Hooks() {
	ping := &tool.Func{ToolName: "ping", ToolDescription: "Pings.",
		Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			return tool.TextResult("pong"), nil
		}}
	tools, _ := tool.NewRegistry(ping)
	var steps []faux.Step
	for range 10 {
		steps = append(steps, faux.Call("", "ping", nil))
	}
	model := faux.New(steps...)

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	h := loopguard.New(&loopguard.Config{Warning: 2, Critical: 3, Global: 4}).Hooks(cancel)
	a := agent.New(agent.Config{Model: model, Tools: tools, Hooks: agent.Hooks{
		BeforeToolCall:    h.BeforeToolCall,
		AfterToolCall:     h.AfterToolCall,
		ToolResultPersist: h.ToolResultPersist,
	}})
	for ev := range a.Run(ctx, llm.UserText("ping until it works")) {
		if ev.Type == agent.EventAgentEnd {
			fmt.Println("run ended:", ev.Reason)
			fmt.Println("breaker:", errors.Is(context.Cause(ctx), loopguard.ErrCircuitBreaker))
		}
	}
	fmt.Println("model calls:", model.Calls())
	// Output:
	// run ended: aborted
	// breaker: true
	// model calls: 4
}
