package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Every modifying point has an Input its hooks read and an Output they
// answer with; the fire method returns the merged Output. Every void point
// has an Event its hooks observe. A hook's error is reported and its answer
// ignored.

// joinContext appends a context to what earlier hooks gave, a blank line
// between them.
func joinContext(acc, s string) string {
	switch {
	case s == "":
		return acc
	case acc == "":
		return s
	}
	return acc + "\n\n" + s
}

func firstDefined(acc *string, s string) {
	if *acc == "" {
		*acc = s
	}
}

// ---- session_start ----

// SessionStartInput is what session_start hooks read.
type SessionStartInput struct {
	SessionID string
	// Source is "startup", "resume", "clear" or "compact", as in Claude Code.
	Source string
}

// SessionStartOutput is a session_start hook's answer.
type SessionStartOutput struct {
	// Context is added to the model's context; contexts of several hooks are
	// concatenated in priority order.
	Context string
	// Halt, when set, asks the caller to end the session; the text is for
	// the user. The first halt wins and stops the remaining hooks.
	Halt string
}

// OnSessionStart registers a session_start hook.
func (b *Bus) OnSessionStart(s Spec, fn func(context.Context, SessionStartInput) (SessionStartOutput, error)) (remove func()) {
	return b.add(SessionStart, s, fn)
}

// SessionStart fires session_start.
func (b *Bus) SessionStart(ctx context.Context, in SessionStartInput) SessionStartOutput {
	var acc SessionStartOutput
	runModifying(b, ctx, SessionStart, &in, func(_ *entry, out SessionStartOutput, ok bool) bool {
		if !ok {
			return false
		}
		acc.Context = joinContext(acc.Context, out.Context)
		acc.Halt = out.Halt
		return out.Halt != ""
	})
	return acc
}

// ---- user_prompt_submit ----

// UserPromptSubmitInput is what user_prompt_submit hooks read.
type UserPromptSubmitInput struct {
	SessionID string
	Prompt    string
}

// UserPromptSubmitOutput is a user_prompt_submit hook's answer.
type UserPromptSubmitOutput struct {
	// Block refuses the prompt: the model never sees it. It stops the
	// remaining hooks. Reason is shown to the user.
	Block  bool
	Reason string
	// Context is added beside the prompt; concatenated across hooks.
	Context string
	// Halt ends the run before it starts; the text is for the user.
	Halt string
}

// OnUserPromptSubmit registers a user_prompt_submit hook.
func (b *Bus) OnUserPromptSubmit(s Spec, fn func(context.Context, UserPromptSubmitInput) (UserPromptSubmitOutput, error)) (remove func()) {
	return b.add(UserPromptSubmit, s, fn)
}

// UserPromptSubmit fires user_prompt_submit.
func (b *Bus) UserPromptSubmit(ctx context.Context, in UserPromptSubmitInput) UserPromptSubmitOutput {
	var acc UserPromptSubmitOutput
	runModifying(b, ctx, UserPromptSubmit, &in, func(e *entry, out UserPromptSubmitOutput, ok bool) bool {
		if !ok {
			return false
		}
		acc.Context = joinContext(acc.Context, out.Context)
		if out.Halt != "" {
			acc.Halt = out.Halt
			return true
		}
		if out.Block {
			acc.Block = true
			acc.Reason = out.Reason
			if acc.Reason == "" {
				acc.Reason = fmt.Sprintf("The prompt was refused by hook %s.", e.spec.Name)
			}
			return true
		}
		return false
	})
	return acc
}

// ---- before_model_resolve ----

// BeforeModelResolveInput is what before_model_resolve hooks read.
type BeforeModelResolveInput struct {
	Prompt   string
	Provider string // the provider the run would use
	Model    string // the model id the run would use
}

// BeforeModelResolveOutput overrides the model of a run. For each field the
// first hook (by priority) that sets it wins.
type BeforeModelResolveOutput struct {
	Provider string
	Model    string
}

// OnBeforeModelResolve registers a before_model_resolve hook.
func (b *Bus) OnBeforeModelResolve(s Spec, fn func(context.Context, BeforeModelResolveInput) (BeforeModelResolveOutput, error)) (remove func()) {
	return b.add(BeforeModelResolve, s, fn)
}

// BeforeModelResolve fires before_model_resolve.
func (b *Bus) BeforeModelResolve(ctx context.Context, in BeforeModelResolveInput) BeforeModelResolveOutput {
	var acc BeforeModelResolveOutput
	runModifying(b, ctx, BeforeModelResolve, &in, func(_ *entry, out BeforeModelResolveOutput, ok bool) bool {
		if ok {
			firstDefined(&acc.Provider, out.Provider)
			firstDefined(&acc.Model, out.Model)
		}
		return false
	})
	return acc
}

// ---- before_prompt_build, before_agent_start ----

// PromptEdit changes the prompt of a run.
type PromptEdit struct {
	// SystemPrompt replaces the system prompt; the first hook that sets it
	// wins.
	SystemPrompt string
	// PrependContext goes before the user's prompt; concatenated across
	// hooks in priority order.
	PrependContext string
	// PrependSystemContext and AppendSystemContext go before and after the
	// system prompt; concatenated across hooks in priority order.
	PrependSystemContext string
	AppendSystemContext  string
}

func (p *PromptEdit) merge(o PromptEdit) {
	firstDefined(&p.SystemPrompt, o.SystemPrompt)
	p.PrependContext = joinContext(p.PrependContext, o.PrependContext)
	p.PrependSystemContext = joinContext(p.PrependSystemContext, o.PrependSystemContext)
	p.AppendSystemContext = joinContext(p.AppendSystemContext, o.AppendSystemContext)
}

// Apply returns the system prompt and user prompt with the edit applied.
func (p PromptEdit) Apply(system, prompt string) (string, string) {
	if p.SystemPrompt != "" {
		system = p.SystemPrompt
	}
	system = joinContext(joinContext(p.PrependSystemContext, system), p.AppendSystemContext)
	return system, joinContext(p.PrependContext, prompt)
}

// Under returns p with o's values wherever p has none: p takes precedence.
// A caller uses it to fold the legacy before_agent_start answer under the
// newer points' answers.
func (p PromptEdit) Under(o PromptEdit) PromptEdit {
	out := p
	firstDefined(&out.SystemPrompt, o.SystemPrompt)
	firstDefined(&out.PrependContext, o.PrependContext)
	firstDefined(&out.PrependSystemContext, o.PrependSystemContext)
	firstDefined(&out.AppendSystemContext, o.AppendSystemContext)
	return out
}

// BeforePromptBuildInput is what before_prompt_build hooks read.
type BeforePromptBuildInput struct {
	Prompt       string
	SystemPrompt string
	Messages     []llm.Message // the history; hooks must not modify it
}

// OnBeforePromptBuild registers a before_prompt_build hook.
func (b *Bus) OnBeforePromptBuild(s Spec, fn func(context.Context, BeforePromptBuildInput) (PromptEdit, error)) (remove func()) {
	return b.add(BeforePromptBuild, s, fn)
}

// BeforePromptBuild fires before_prompt_build.
func (b *Bus) BeforePromptBuild(ctx context.Context, in BeforePromptBuildInput) PromptEdit {
	var acc PromptEdit
	runModifying(b, ctx, BeforePromptBuild, &in, func(_ *entry, out PromptEdit, ok bool) bool {
		if ok {
			acc.merge(out)
		}
		return false
	})
	return acc
}

// BeforeAgentStartInput is what before_agent_start hooks read.
type BeforeAgentStartInput struct {
	Prompt   string
	Messages []llm.Message // the history; hooks must not modify it
}

// BeforeAgentStartOutput is the legacy answer carrying the fields of
// before_model_resolve and before_prompt_build; the answers of those newer
// points take precedence (see BeforeModelResolveOutput.Under and
// PromptEdit.Under).
type BeforeAgentStartOutput struct {
	Provider string
	Model    string
	PromptEdit
}

// Under returns o with a's model fields wherever o has none.
func (o BeforeModelResolveOutput) Under(a BeforeAgentStartOutput) BeforeModelResolveOutput {
	firstDefined(&o.Provider, a.Provider)
	firstDefined(&o.Model, a.Model)
	return o
}

// OnBeforeAgentStart registers a before_agent_start hook.
func (b *Bus) OnBeforeAgentStart(s Spec, fn func(context.Context, BeforeAgentStartInput) (BeforeAgentStartOutput, error)) (remove func()) {
	return b.add(BeforeAgentStart, s, fn)
}

// BeforeAgentStart fires before_agent_start.
func (b *Bus) BeforeAgentStart(ctx context.Context, in BeforeAgentStartInput) BeforeAgentStartOutput {
	var acc BeforeAgentStartOutput
	runModifying(b, ctx, BeforeAgentStart, &in, func(_ *entry, out BeforeAgentStartOutput, ok bool) bool {
		if ok {
			firstDefined(&acc.Provider, out.Provider)
			firstDefined(&acc.Model, out.Model)
			acc.PromptEdit.merge(out.PromptEdit)
		}
		return false
	})
	return acc
}

// ---- llm_input, llm_output ----

// LLMInputEvent is what llm_input hooks observe: the request about to be
// sent. Hooks must not modify it.
type LLMInputEvent struct {
	Request *llm.Request
}

// OnLLMInput registers an llm_input hook.
func (b *Bus) OnLLMInput(s Spec, fn func(context.Context, LLMInputEvent) error) (remove func()) {
	return b.add(LLMInput, s, voidFunc(fn))
}

// LLMInput fires llm_input and waits for its hooks.
func (b *Bus) LLMInput(ctx context.Context, ev LLMInputEvent) { runVoid(b, ctx, LLMInput, ev) }

// LLMOutputEvent is what llm_output hooks observe: the assistant message a
// model call produced, with its usage.
type LLMOutputEvent struct {
	Message llm.Message
}

// OnLLMOutput registers an llm_output hook.
func (b *Bus) OnLLMOutput(s Spec, fn func(context.Context, LLMOutputEvent) error) (remove func()) {
	return b.add(LLMOutput, s, voidFunc(fn))
}

// LLMOutput fires llm_output and waits for its hooks.
func (b *Bus) LLMOutput(ctx context.Context, ev LLMOutputEvent) { runVoid(b, ctx, LLMOutput, ev) }

// ---- before_tool_call ----

// Permission is a hook's say on whether a tool call needs a person's
// approval.
type Permission string

// The permissions a before_tool_call hook may give. Deny is the same as
// Block.
const (
	PermissionNone  Permission = ""
	PermissionAllow Permission = "allow" // approve without asking
	PermissionAsk   Permission = "ask"   // ask a person even if the policy would not
	PermissionDeny  Permission = "deny"  // refuse the call
)

// BeforeToolCallInput is what before_tool_call hooks read: the call, with
// the arguments as rewritten by the hooks before this one.
type BeforeToolCallInput struct {
	Call tool.Call
}

// BeforeToolCallOutput is a before_tool_call hook's answer; merged, it is
// the bus's verdict on the call.
type BeforeToolCallOutput struct {
	// Args, when set, replace the call's arguments. Later hooks see the
	// rewrite, so the last rewrite wins.
	Args json.RawMessage
	// Block refuses the call and stops the remaining hooks; Reason is what
	// the model reads in the error result.
	Block  bool
	Reason string
	// Permission: PermissionAsk from any hook beats PermissionAllow;
	// PermissionDeny blocks. With Ask, Reason is shown to the person asked.
	Permission Permission
	// Halt asks the caller to end the run (the call is blocked too); the
	// text is for the user.
	Halt string
}

// OnBeforeToolCall registers a before_tool_call hook.
func (b *Bus) OnBeforeToolCall(s Spec, fn func(context.Context, BeforeToolCallInput) (BeforeToolCallOutput, error)) (remove func()) {
	return b.add(BeforeToolCall, s, fn)
}

// BeforeToolCall fires before_tool_call. The merged Args are the final
// arguments when any hook rewrote them. A hook that fails blocks the call
// unless its Spec says FailOpen.
func (b *Bus) BeforeToolCall(ctx context.Context, in BeforeToolCallInput) BeforeToolCallOutput {
	var acc BeforeToolCallOutput
	runModifying(b, ctx, BeforeToolCall, &in, func(e *entry, out BeforeToolCallOutput, ok bool) bool {
		if !ok {
			if e.spec.FailOpen {
				return false
			}
			acc.Block = true
			acc.Permission = PermissionDeny
			acc.Reason = fmt.Sprintf("Tool call blocked because the before_tool_call hook %s failed.", e.spec.Name)
			return true
		}
		if len(out.Args) > 0 {
			acc.Args = out.Args
			in.Call.Args = out.Args
		}
		if out.Halt != "" || out.Block || out.Permission == PermissionDeny {
			acc.Block = true
			acc.Permission = PermissionDeny
			acc.Halt = out.Halt
			acc.Reason = out.Reason
			if acc.Reason == "" {
				acc.Reason = fmt.Sprintf("Tool call blocked by hook %s.", e.spec.Name)
			}
			return true
		}
		switch {
		case out.Permission == PermissionAsk && acc.Permission != PermissionAsk:
			acc.Permission = PermissionAsk
			acc.Reason = out.Reason
		case out.Permission == PermissionAllow && acc.Permission == PermissionNone:
			acc.Permission = PermissionAllow
		}
		return false
	})
	return acc
}

// ---- after_tool_call ----

// AfterToolCallEvent is what after_tool_call hooks observe.
type AfterToolCallEvent struct {
	Call   tool.Call
	Result tool.Result
}

// OnAfterToolCall registers an after_tool_call hook.
func (b *Bus) OnAfterToolCall(s Spec, fn func(context.Context, AfterToolCallEvent) error) (remove func()) {
	return b.add(AfterToolCall, s, voidFunc(fn))
}

// AfterToolCall fires after_tool_call and waits for its hooks.
func (b *Bus) AfterToolCall(ctx context.Context, ev AfterToolCallEvent) {
	runVoid(b, ctx, AfterToolCall, ev)
}

// ---- tool_result_persist ----

// ToolResultPersistInput is what tool_result_persist hooks read: the call
// and its result as rewritten by the hooks before this one.
type ToolResultPersistInput struct {
	Call   tool.Call
	Result tool.Result
}

// ToolResultPersistOutput is a tool_result_persist hook's answer.
type ToolResultPersistOutput struct {
	// Result, when non-nil, replaces the result that is stored and that
	// the model reads. Later hooks see the rewrite.
	Result *tool.Result
	// Halt asks the caller to end the run after this result; the text is
	// for the user.
	Halt string
}

// OnToolResultPersist registers a tool_result_persist hook.
func (b *Bus) OnToolResultPersist(s Spec, fn func(context.Context, ToolResultPersistInput) (ToolResultPersistOutput, error)) (remove func()) {
	return b.add(ToolResultPersist, s, fn)
}

// ToolResultPersist fires tool_result_persist. The merged Result is nil
// when no hook rewrote the result.
func (b *Bus) ToolResultPersist(ctx context.Context, in ToolResultPersistInput) ToolResultPersistOutput {
	var acc ToolResultPersistOutput
	runModifying(b, ctx, ToolResultPersist, &in, func(_ *entry, out ToolResultPersistOutput, ok bool) bool {
		if !ok {
			return false
		}
		if out.Result != nil {
			r := *out.Result
			acc.Result = &r
			in.Result = r
		}
		if out.Halt != "" {
			acc.Halt = out.Halt
			return true
		}
		return false
	})
	return acc
}

// ---- before_compaction, after_compaction ----

// CompactionEvent is what before_compaction and after_compaction hooks
// observe.
type CompactionEvent struct {
	// Trigger is "auto" or "manual".
	Trigger string
	// Instructions are the user's instructions for a manual compaction.
	Instructions string
	Messages     int // messages in the context before compaction
	TokensBefore int
	// TokensAfter and Summary are set after compaction.
	TokensAfter int
	Summary     string
}

// OnBeforeCompaction registers a before_compaction hook.
func (b *Bus) OnBeforeCompaction(s Spec, fn func(context.Context, CompactionEvent) error) (remove func()) {
	return b.add(BeforeCompaction, s, voidFunc(fn))
}

// BeforeCompaction fires before_compaction and waits for its hooks.
func (b *Bus) BeforeCompaction(ctx context.Context, ev CompactionEvent) {
	runVoid(b, ctx, BeforeCompaction, ev)
}

// OnAfterCompaction registers an after_compaction hook.
func (b *Bus) OnAfterCompaction(s Spec, fn func(context.Context, CompactionEvent) error) (remove func()) {
	return b.add(AfterCompaction, s, voidFunc(fn))
}

// AfterCompaction fires after_compaction and waits for its hooks.
func (b *Bus) AfterCompaction(ctx context.Context, ev CompactionEvent) {
	runVoid(b, ctx, AfterCompaction, ev)
}

// ---- stop ----

// StopInput is what stop hooks read when the agent would stop.
type StopInput struct {
	SessionID string
	// Last is the final assistant message.
	Last llm.Message
	// Active is true when the run is already going on because a stop hook
	// asked it to (Claude Code's stop_hook_active): a hook checks it so as
	// not to keep the run going for ever.
	Active bool
}

// StopOutput is a stop hook's answer.
type StopOutput struct {
	// Continue makes the run go on; Reason tells the model why and what to
	// do. Any hook may ask; the reasons of all are joined.
	Continue bool
	Reason   string
	// Messages are added to the context before the run goes on.
	Messages []llm.Message
	// Halt ends the run even if another hook asked to continue; the text
	// is for the user. It stops the remaining hooks.
	Halt string
}

// OnStop registers a stop hook.
func (b *Bus) OnStop(s Spec, fn func(context.Context, StopInput) (StopOutput, error)) (remove func()) {
	return b.add(Stop, s, fn)
}

// Stop fires stop.
func (b *Bus) Stop(ctx context.Context, in StopInput) StopOutput {
	var acc StopOutput
	var reasons []string
	runModifying(b, ctx, Stop, &in, func(_ *entry, out StopOutput, ok bool) bool {
		if !ok {
			return false
		}
		if out.Halt != "" {
			acc = StopOutput{Halt: out.Halt}
			reasons = nil
			return true
		}
		if out.Continue {
			acc.Continue = true
			if out.Reason != "" {
				reasons = append(reasons, out.Reason)
			}
			acc.Messages = append(acc.Messages, out.Messages...)
		}
		return false
	})
	acc.Reason = strings.Join(reasons, "\n")
	return acc
}

// ---- before_agent_finalize ----

// FinalizeAction is a before_agent_finalize hook's decision.
type FinalizeAction string

// The finalize actions.
const (
	FinalizeNone     FinalizeAction = ""
	FinalizeAccept   FinalizeAction = "finalize" // end the run with this reply
	FinalizeContinue FinalizeAction = "continue" // go on: the reply is not the end
	FinalizeRevise   FinalizeAction = "revise"   // ask the model to revise its reply
)

// BeforeAgentFinalizeInput is what before_agent_finalize hooks read.
type BeforeAgentFinalizeInput struct {
	Last     llm.Message
	Messages []llm.Message // the whole context; hooks must not modify it
}

// BeforeAgentFinalizeOutput is a before_agent_finalize hook's answer. The
// first hook that sets an Action decides, and the rest do not run.
type BeforeAgentFinalizeOutput struct {
	Action FinalizeAction
	// Reason tells the model what to do when the action is continue or
	// revise.
	Reason   string
	Messages []llm.Message
}

// OnBeforeAgentFinalize registers a before_agent_finalize hook.
func (b *Bus) OnBeforeAgentFinalize(s Spec, fn func(context.Context, BeforeAgentFinalizeInput) (BeforeAgentFinalizeOutput, error)) (remove func()) {
	return b.add(BeforeAgentFinalize, s, fn)
}

// BeforeAgentFinalize fires before_agent_finalize.
func (b *Bus) BeforeAgentFinalize(ctx context.Context, in BeforeAgentFinalizeInput) BeforeAgentFinalizeOutput {
	var acc BeforeAgentFinalizeOutput
	runModifying(b, ctx, BeforeAgentFinalize, &in, func(_ *entry, out BeforeAgentFinalizeOutput, ok bool) bool {
		if ok && out.Action != FinalizeNone {
			acc = out
			return true
		}
		return false
	})
	return acc
}

// ---- agent_end, session_end ----

// AgentEndEvent is what agent_end hooks observe.
type AgentEndEvent struct {
	Messages []llm.Message // hooks must not modify them
	// Err is why the run failed; nil for a successful run.
	Err      error
	Duration time.Duration
}

// OnAgentEnd registers an agent_end hook.
func (b *Bus) OnAgentEnd(s Spec, fn func(context.Context, AgentEndEvent) error) (remove func()) {
	return b.add(AgentEnd, s, voidFunc(fn))
}

// AgentEnd fires agent_end and waits for its hooks.
func (b *Bus) AgentEnd(ctx context.Context, ev AgentEndEvent) { runVoid(b, ctx, AgentEnd, ev) }

// SessionEndEvent is what session_end hooks observe.
type SessionEndEvent struct {
	SessionID string
	// Reason is why the session ended: "exit", "clear", "logout", "other".
	Reason string
}

// OnSessionEnd registers a session_end hook.
func (b *Bus) OnSessionEnd(s Spec, fn func(context.Context, SessionEndEvent) error) (remove func()) {
	return b.add(SessionEnd, s, voidFunc(fn))
}

// SessionEnd fires session_end and waits for its hooks.
func (b *Bus) SessionEnd(ctx context.Context, ev SessionEndEvent) { runVoid(b, ctx, SessionEnd, ev) }

// SubagentEvent is what subagent_start and subagent_stop hooks observe
// (Claude Code's SubagentStart and SubagentStop): a child session started
// by the agent tool, on the bus of the run that started it.
type SubagentEvent struct {
	// AgentID is the task id; AgentType the agent type (general, or a
	// definition's name), which command hooks match on.
	AgentID, AgentType string
	// ChildSessionID is the child's session.
	ChildSessionID string
	// TranscriptPath is the child's transcript and LastAssistantMessage
	// its final text (subagent_stop only).
	TranscriptPath, LastAssistantMessage string
	// Status is how the task ended (subagent_stop only).
	Status string
}

// OnSubagentStart registers a subagent_start hook.
func (b *Bus) OnSubagentStart(s Spec, fn func(context.Context, SubagentEvent) error) (remove func()) {
	return b.add(SubagentStart, s, voidFunc(fn))
}

// SubagentStart fires subagent_start and waits for its hooks.
func (b *Bus) SubagentStart(ctx context.Context, ev SubagentEvent) {
	runVoid(b, ctx, SubagentStart, ev)
}

// OnSubagentStop registers a subagent_stop hook.
func (b *Bus) OnSubagentStop(s Spec, fn func(context.Context, SubagentEvent) error) (remove func()) {
	return b.add(SubagentStop, s, voidFunc(fn))
}

// SubagentStop fires subagent_stop and waits for its hooks.
func (b *Bus) SubagentStop(ctx context.Context, ev SubagentEvent) { runVoid(b, ctx, SubagentStop, ev) }
