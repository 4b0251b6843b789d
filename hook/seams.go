package hook

import (
	"context"
	"sync/atomic"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Seams are the bus in the shape of the agent loop's function-typed hooks
// (agent.Hooks): the same field names and function types, so a caller copies
// them field by field. agent.Hooks has seams the bus does not fill here
// (BeforeFinalize: before_agent_finalize is asked inside Stop), so the two
// types are not convertible.
type Seams struct {
	// Approve is nil: approval is folded into BeforeToolCall, after the
	// before_tool_call hooks, so that a hook can answer or force the
	// question first, as Claude Code's PreToolUse hooks do.
	Approve           func(ctx context.Context, call tool.Call) (allow bool, reason string)
	BeforeToolCall    func(ctx context.Context, call tool.Call) (tool.Call, *tool.Result)
	AfterToolCall     func(ctx context.Context, call tool.Call, res tool.Result)
	ToolResultPersist func(ctx context.Context, call tool.Call, res tool.Result) tool.Result
	LLMInput          func(ctx context.Context, req *llm.Request)
	LLMOutput         func(ctx context.Context, msg llm.Message)
	Stop              func(ctx context.Context, last llm.Message) (cont bool, inject []llm.Message)
	AgentEnd          func(ctx context.Context, messages []llm.Message)
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
		if r.opts.Registry != nil {
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
