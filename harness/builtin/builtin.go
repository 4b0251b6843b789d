// Package builtin is the built-in harness: today's attempt, the agent loop
// of package agent, behind the harness contract. The runner's own loop
// remains the built-in path of `agentloop run`; this package is the same
// engine for programs that drive harnesses themselves and for the
// conformance suite (harness/harnesstest).
package builtin

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Harness runs attempts on agent.Agent.
type Harness struct{}

// ID is harness.BuiltinID.
func (Harness) ID() string { return harness.BuiltinID }

// Supports every route, at the lowest priority.
func (Harness) Supports(context.Context, harness.Route) harness.Support {
	return harness.Support{OK: true, Reason: "the built-in agent loop runs every model"}
}

// RunAttempt runs the agent loop once. A continuation is resumed with
// Continue, so its completed tools are not run again; SideEffects is set
// once a call that is not read-only starts.
func (Harness) RunAttempt(ctx context.Context, a *harness.Attempt) (*harness.Result, error) {
	if a.Model == nil {
		return nil, &harness.PreflightError{Harness: harness.BuiltinID, Err: agent.ErrNoModel}
	}
	tr := &harness.Tracker{}
	observe := a.ObserveToolTerminal
	if observe == nil {
		observe = tr.Observe
	}
	hooks := agent.Hooks{}
	var mu sync.Mutex
	denied := map[string]bool{}
	if ap := a.Approval; ap != nil {
		hooks.Approve = func(ctx context.Context, call tool.Call) (bool, string) {
			ok, reason := ap.Approve(ctx, call)
			if !ok {
				mu.Lock()
				denied[call.ID] = true
				mu.Unlock()
			}
			return ok, reason
		}
	}
	refused := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		return denied[id]
	}
	history := append([]llm.Message(nil), a.History...)
	if a.Continuation != nil {
		history = append(history, a.Continuation.Messages()...)
	}
	ag := agent.New(agent.Config{Model: a.Model, Tools: a.Tools, SystemPrompt: a.System, Options: a.Options,
		Messages: history, Hooks: hooks})
	m := harness.NewMirror(a)
	res := &harness.Result{}
	thread := orStr(a.SessionID, a.RunID)
	turn := orStr(a.RunID, "run")
	n := 0
	if a.Continuation != nil {
		// The continuation's own messages were mirrored by the attempt
		// that made them; count them so new items get new ids.
		n = len(a.Continuation.Completed) + 1
	}
	started := map[string]bool{}
	seq := ag.Continue(ctx)
	if a.Continuation == nil {
		seq = ag.Run(ctx, a.Prompt)
	}
	var end *agent.Event
	for ev, err := range seq {
		if err != nil {
			return nil, &harness.PreflightError{Harness: harness.BuiltinID, Err: err}
		}
		switch ev.Type {
		case agent.EventMessageEnd:
			if ev.Message != nil {
				id := harness.MirrorID(harness.BuiltinID, thread, turn, strconv.Itoa(n))
				n++
				if err := m.Add(ctx, harness.Item{MirrorID: id, Message: *ev.Message}, ev.Message.Role == llm.RoleUser); err != nil {
					res.Err = err
				}
				if u := ev.Message.Usage; u != nil {
					res.Usage.Add(*u)
				}
			}
		case agent.EventToolExecutionStart:
			started[ev.ToolCallID] = true
		case agent.EventToolExecutionEnd:
			// The loop announces a call before its approval is asked: a
			// refused call never started.
			call := tool.Call{ID: ev.ToolCallID, Name: ev.ToolName, Args: ev.Args}
			ran := started[ev.ToolCallID] && !refused(ev.ToolCallID)
			mutating := a.Tools == nil || !a.Tools.ReadOnly(call)
			if ran && mutating {
				res.SideEffects = true
			}
			t := harness.ToolTerminal{CallID: ev.ToolCallID, Name: ev.ToolName, Args: ev.Args,
				ExecutionStarted: ran, Outcome: harness.OutcomeSuccess, Mutating: mutating}
			if ev.Result != nil && ev.Result.IsError {
				t.Outcome = harness.OutcomeFailure
				t.Error = resultText(ev.Result)
			}
			r := observe(t)
			res.LastToolError = r.LastToolError
		case agent.EventAgentEnd:
			e := ev
			end = &e
		}
		if a.Emit != nil {
			a.Emit(ev)
		}
	}
	res.Items = m.Items()
	res.PromptPersisted = m.PromptPersisted
	if end == nil {
		res.StopReason = llm.StopReasonError
		if res.Err == nil {
			res.Err = fmt.Errorf("the attempt ended without a result")
		}
		return res, nil
	}
	res.StopReason = end.StopReason
	if end.Err != nil {
		res.Err = end.Err
	}
	return res, nil
}

func resultText(r *tool.Result) string {
	s := ""
	for _, c := range r.Content {
		if c.Type == llm.ContentText {
			s += c.Text
		}
	}
	return s
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
