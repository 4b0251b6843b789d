package hook

import (
	"context"
	"sync/atomic"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Seams are the function-typed seams around the agent loop (agent.Hooks is
// this type); every field is optional. The loop calls them from the
// goroutine running it, never concurrently with each other, so a slow hook
// delays the run. A panicking seam is reported as a hook_error event and
// treated as its safe default (a panicking Approve or BeforeToolCall blocks
// the call). A seam may report an error of its own with
// Agent.ReportHookError while it runs. Bus.Seams fills them from the bus, but
// for Approve (folded into BeforeToolCall, after the before_tool_call
// hooks, so that a hook can answer or force the question first, as Claude
// Code's PreToolUse hooks do) and BeforeFinalize (the caller binds it).
type Seams struct {
	// Approve decides whether a call may run; a denial becomes an error
	// result carrying reason. Nil allows everything.
	Approve func(ctx context.Context, call tool.Call) (allow bool, reason string)
	// BeforeToolCall runs after Approve. It may return a rewritten call
	// (its arguments are validated again) or block the call by returning a
	// result, which is then the call's result.
	BeforeToolCall func(ctx context.Context, call tool.Call) (tool.Call, *tool.Result)
	// AfterToolCall observes each result when its call completes.
	AfterToolCall func(ctx context.Context, call tool.Call, res tool.Result)
	// ToolResultPersist may rewrite a result before it is appended to the
	// conversation. It runs for every call, refused or not; its ctx says
	// whether the tool was executed (tool.Executed).
	ToolResultPersist func(ctx context.Context, call tool.Call, res tool.Result) tool.Result
	// LLMInput observes (or adjusts) each request before it is sent.
	LLMInput func(ctx context.Context, req *llm.Request)
	// LLMOutput observes each final assistant message.
	LLMOutput func(ctx context.Context, msg llm.Message)
	// Stop runs when the agent would stop. Returning cont keeps the run
	// going with the inject messages (a default nudge when empty), at most
	// agent.Config.MaxStopContinuations times per run.
	Stop func(ctx context.Context, last llm.Message) (cont bool, inject []llm.Message)
	// BeforeFinalize runs when the run is about to end with last as its
	// final answer (after Stop). Returning a non-blank instruction asks for
	// a revision: it is sent to the model as a user message and the run
	// goes on, at most agent.Config.MaxFinalizeRevisions times per run. "" finalizes.
	BeforeFinalize func(ctx context.Context, last llm.Message) (revise string)
	// AgentEnd runs at the end of every run with the messages it added.
	AgentEnd func(ctx context.Context, messages []llm.Message)
}

// SeamsOptions configure the seams of one run.
type SeamsOptions struct {
	// Approval decides each call after the before_tool_call hooks. nil
	// allows every call, except that a hook's "ask" is then refused, since
	// there is nobody to ask.
	Approval *tool.Approval
	// Registry, when set, re-validates arguments a hook rewrote; a rewrite
	// that does not fit the tool's schema becomes an error result.
	Registry *tool.Registry
	// SessionID is passed to stop hooks.
	SessionID string
	// Halt is called when a hook asks to end the run (Claude Code's
	// "continue": false); the caller cancels the run. nil only reports it.
	Halt func(reason string)
}

// Seams returns the bus bound to one run. Make one per run: it remembers
// whether a stop hook has already kept the run going.
func (b *Bus) Seams(opts SeamsOptions) Seams {
	r := &run{bus: b, opts: opts}
	if r.opts.Approval == nil {
		r.opts.Approval = &tool.Approval{}
	}
	return Seams{
		BeforeToolCall:    r.beforeToolCall,
		AfterToolCall:     r.afterToolCall,
		ToolResultPersist: r.toolResultPersist,
		LLMInput:          func(ctx context.Context, req *llm.Request) { b.LLMInput(ctx, LLMInputEvent{Request: req}) },
		LLMOutput:         func(ctx context.Context, msg llm.Message) { b.LLMOutput(ctx, LLMOutputEvent{Message: msg}) },
		Stop:              r.stop,
		AgentEnd:          func(ctx context.Context, msgs []llm.Message) { b.AgentEnd(ctx, AgentEndEvent{Messages: msgs}) },
	}
}

type run struct {
	bus        *Bus
	opts       SeamsOptions
	stopActive atomic.Bool
}

func (r *run) halt(ctx context.Context, p Point, reason string) {
	if reason == "" {
		return
	}
	r.bus.report(ctx, Notice{Point: p, Kind: NoticeMessage, Text: reason})
	if r.opts.Halt != nil {
		r.opts.Halt(reason)
	}
}

func (r *run) beforeToolCall(ctx context.Context, call tool.Call) (tool.Call, *tool.Result) {
	out := r.bus.BeforeToolCall(ctx, BeforeToolCallInput{Call: call})
	r.halt(ctx, BeforeToolCall, out.Halt)
	if out.Block {
		res := tool.ErrorResult(out.Reason)
		return call, &res
	}
	if len(out.Args) > 0 {
		call.Args = out.Args
		// An engine's own tool (Claude Code's Bash) is not in the registry:
		// the engine checks the arguments it is handed back.
		if _, ours := r.opts.Registry.Get(call.Name); ours {
			c, bad := r.opts.Registry.Prepare(llm.ToolCall(call.ID, call.Name, call.Args))
			if bad != nil {
				return call, bad
			}
			call = c
		}
	}
	a := r.opts.Approval
	d := a.Decide(ctx, call)
	switch out.Permission {
	case PermissionAllow:
		if d.Verdict == tool.VerdictAsk { // the hook answered the question
			d = tool.Decision{Verdict: tool.VerdictAllow}
		}
	case PermissionAsk:
		if d.Verdict != tool.VerdictDeny { // the hook forces the question
			reason := out.Reason
			if reason == "" {
				reason = d.Reason
			}
			d = tool.Decision{Verdict: tool.VerdictAsk, Reason: reason}
		}
	}
	if ok, reason := a.Resolve(ctx, call, d); !ok {
		res := tool.ErrorResult(reason)
		return call, &res
	}
	return call, nil
}

func (r *run) afterToolCall(ctx context.Context, call tool.Call, res tool.Result) {
	r.bus.AfterToolCall(ctx, AfterToolCallEvent{Call: call, Result: res})
}

func (r *run) toolResultPersist(ctx context.Context, call tool.Call, res tool.Result) tool.Result {
	out := r.bus.ToolResultPersist(ctx, ToolResultPersistInput{Call: call, Result: res})
	r.halt(ctx, ToolResultPersist, out.Halt)
	if out.Result != nil {
		return *out.Result
	}
	return res
}

// StopFeedbackPrefix starts the user message through which a stop hook's
// reason reaches the model.
const StopFeedbackPrefix = "Stop hook feedback:\n"

func (r *run) stop(ctx context.Context, last llm.Message) (bool, []llm.Message) {
	out := r.bus.Stop(ctx, StopInput{SessionID: r.opts.SessionID, Last: last, Active: r.stopActive.Load()})
	if out.Halt != "" {
		r.halt(ctx, Stop, out.Halt)
		return false, nil
	}
	if !out.Continue {
		fin := r.bus.BeforeAgentFinalize(ctx, BeforeAgentFinalizeInput{Last: last})
		if fin.Action != FinalizeContinue && fin.Action != FinalizeRevise {
			return false, nil
		}
		out = StopOutput{Continue: true, Reason: fin.Reason, Messages: fin.Messages}
	}
	r.stopActive.Store(true)
	reason := out.Reason
	if reason == "" && len(out.Messages) == 0 {
		reason = "A stop hook asked you to carry on: the task is not finished."
	}
	inject := append([]llm.Message(nil), out.Messages...)
	if reason != "" {
		inject = append(inject, llm.UserText(StopFeedbackPrefix+reason))
	}
	return true, inject
}
