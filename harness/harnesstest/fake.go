package harnesstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Fake is a scripted external engine: it owns native threads in memory,
// runs its own small loop on Attempt.Model and Attempt.Tools, asks
// Attempt.Approval for every call, and, like a real engine resuming a
// thread, re-emits the items of earlier turns (with their stable ids).
// Each model message it emits as message_end carries that call's usage,
// as a real engine reports it mid-turn, so the core's budgets bind there.
type Fake struct {
	// Name is the harness id ("fake" when empty).
	Name string
	// Preflight, when set, is returned as a *PreflightError before any
	// model work.
	Preflight error

	mu      sync.Mutex
	threads map[string]*thread
	moved   map[string]string
	next    int
	runs    int
}

type thread struct {
	items []harness.Item
	turns int
}

// ID returns the harness id.
func (f *Fake) ID() string {
	if f.Name == "" {
		return "fake"
	}
	return f.Name
}

// Supports claims routes of provider "fake".
func (f *Fake) Supports(_ context.Context, r harness.Route) harness.Support {
	return harness.Support{OK: r.Provider == f.ID(), Priority: 10}
}

// Runs counts the attempts that reached the engine.
func (f *Fake) Runs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs
}

// Lose deletes a native thread, as an engine whose state was wiped does.
func (f *Fake) Lose(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.threads, id)
}

// Transfer moves a native thread to a new id, as an engine that forks a
// thread on resume does: the next attempt bound to from runs on to, and
// its Binding names to.
func (f *Fake) Transfer(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.moved == nil {
		f.moved = map[string]string{}
	}
	f.threads[to] = f.threads[from]
	delete(f.threads, from)
	f.moved[from] = to
}

// RunAttempt runs one native turn.
func (f *Fake) RunAttempt(ctx context.Context, a *harness.Attempt) (*harness.Result, error) {
	if f.Preflight != nil {
		return nil, &harness.PreflightError{Harness: f.ID(), Err: f.Preflight}
	}
	f.mu.Lock()
	f.runs++
	if f.threads == nil {
		f.threads = map[string]*thread{}
	}
	var id string
	var th *thread
	if b := a.Binding; b != nil {
		id = b.NativeID
		if to, ok := f.moved[id]; ok {
			id = to
		}
		th = f.threads[id]
		if th == nil {
			f.mu.Unlock()
			return nil, &harness.BindingLostError{Harness: f.ID(), NativeID: b.NativeID, SessionID: a.SessionID}
		}
	} else {
		f.next++
		id = "thr" + strconv.Itoa(f.next)
		th = &thread{}
		f.threads[id] = th
	}
	replay := append([]harness.Item(nil), th.items...)
	th.turns++
	turn := strconv.Itoa(th.turns)
	if a.Continuation != nil && th.turns > 1 {
		// A retry continues the failed turn, it is not a new one.
		th.turns--
		turn = strconv.Itoa(th.turns)
	}
	f.mu.Unlock()

	m := harness.NewMirror(a)
	tr := &harness.Tracker{}
	observe := a.ObserveToolTerminal
	if observe == nil {
		observe = tr.Observe
	}
	res := &harness.Result{Binding: &harness.Binding{Harness: f.ID(), NativeID: id, Version: "1"}}
	keep := func(it harness.Item, user bool) {
		if err := m.Add(ctx, it, user); err != nil && res.Err == nil {
			res.Err = err
		}
		f.mu.Lock()
		known := false
		for _, old := range th.items {
			known = known || old.MirrorID == it.MirrorID
		}
		if !known {
			th.items = append(th.items, it)
		}
		f.mu.Unlock()
	}
	// A resumed engine replays its thread: the mirror must not grow.
	for _, it := range replay {
		keep(it, false)
	}
	var msgs []llm.Message
	for _, it := range replay {
		msgs = append(msgs, it.Message)
	}
	k := 0
	if c := a.Continuation; c != nil {
		msgs = append(msgs, c.Messages()...)
		k = len(c.Completed)
	} else {
		msgs = append(msgs, a.Prompt)
		keep(harness.Item{MirrorID: harness.MirrorID(f.ID(), id, turn, "user"), Message: a.Prompt}, true)
	}
	emit := func(ev agent.Event) {
		if a.Emit != nil {
			a.Emit(ev)
		}
	}
	var specs []llm.ToolSpec
	if a.Tools != nil {
		specs = a.Tools.Specs()
	}
	res.PromptPersisted = m.PromptPersisted
	for {
		var final *llm.Message
		var serr error
		for ev, err := range a.Model.Stream(ctx, &llm.Request{SystemPrompt: a.System, Messages: msgs, Tools: specs, Options: a.Options}) {
			if err != nil {
				serr = err
				break
			}
			if ev.Type == llm.EventDone || ev.Type == llm.EventError {
				final = ev.Message
				if ev.Err != nil {
					serr = ev.Err
				}
			}
		}
		if final == nil && serr == nil {
			serr = errors.New("the fake engine's model ended without a message")
		}
		if serr != nil {
			res.Err, res.StopReason = serr, llm.StopReasonError
			if ctx.Err() != nil {
				res.StopReason = llm.StopReasonAborted
			}
			break
		}
		msg := final.Clone()
		msgs = append(msgs, msg)
		keep(harness.Item{MirrorID: harness.MirrorID(f.ID(), id, turn, "msg"+strconv.Itoa(k)), Message: msg}, false)
		k++
		emit(agent.Event{Type: agent.EventMessageEnd, Message: &msg})
		if u := msg.Usage; u != nil {
			res.Usage.Add(*u)
		}
		calls := msg.ToolCalls()
		if len(calls) == 0 {
			res.StopReason = msg.StopReason
			break
		}
		for _, c := range calls {
			call := tool.Call{ID: c.ID, Name: c.Name, Args: c.Arguments}
			emit(agent.Event{Type: agent.EventToolExecutionStart, ToolCallID: c.ID, ToolName: c.Name, Args: c.Arguments})
			mutating := a.Tools == nil || !a.Tools.ReadOnly(call)
			var out tool.Result
			started := false
			if ok, reason := approve(ctx, a.Approval, call); !ok {
				out = tool.ErrorResult(reason)
			} else if a.Tools == nil {
				out = tool.ErrorResult(fmt.Sprintf("no tool %s", c.Name))
			} else {
				started = true
				if mutating {
					res.SideEffects = true
				}
				out = a.Tools.Execute(ctx, c, nil)
			}
			t := harness.ToolTerminal{CallID: c.ID, Name: c.Name, Args: c.Arguments, ExecutionStarted: started,
				Outcome: harness.OutcomeSuccess, Mutating: mutating}
			if out.IsError {
				t.Outcome = harness.OutcomeFailure
			}
			res.LastToolError = observe(t).LastToolError
			rm := out.Message(c.ID, c.Name)
			msgs = append(msgs, rm)
			keep(harness.Item{MirrorID: harness.MirrorID(f.ID(), id, turn, "result", c.ID), Message: rm}, false)
			emit(agent.Event{Type: agent.EventToolExecutionEnd, ToolCallID: c.ID, ToolName: c.Name, Args: c.Arguments, Result: &out})
		}
		if ctx.Err() != nil {
			res.Err, res.StopReason = ctx.Err(), llm.StopReasonAborted
			break
		}
	}
	res.Items = m.Items()
	var own []llm.Message
	for _, it := range res.Items[len(replay):] {
		own = append(own, it.Message)
	}
	res.Settled = res.Err == nil && harness.Settled(own)
	return res, nil
}

func approve(ctx context.Context, ap *tool.Approval, call tool.Call) (bool, string) {
	if ap == nil {
		return true, ""
	}
	return ap.Approve(ctx, call)
}
