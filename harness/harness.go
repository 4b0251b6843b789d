package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// BuiltinID is the id of the built-in harness.
const BuiltinID = "builtin"

// Harness runs one prepared attempt of a run.
type Harness interface {
	// ID names the harness: "builtin", "claude-code", "pi", "acp:<name>".
	ID() string
	// Supports says whether the harness can run a route, and how keenly
	// (auto selection takes the highest priority).
	Supports(ctx context.Context, r Route) Support
	// RunAttempt runs the attempt to its end. An error raised before any
	// model work is a *PreflightError; every other failure is in
	// Result.Err, with Result.SideEffects saying whether it already acted.
	RunAttempt(ctx context.Context, a *Attempt) (*Result, error)
}

// Route is what selection knows of a run.
type Route struct {
	Provider, Model string
}

// Support is a harness's answer to a route.
type Support struct {
	OK       bool
	Priority int
	Reason   string
}

// Attempt is one prepared attempt. The core owns everything in it; the
// harness reports back through Emit, Mirror and ObserveToolTerminal.
type Attempt struct {
	SessionID, RunID string
	// Attempt counts from 1 within the run.
	Attempt int
	// Prompt is the run's user turn; History what came before it.
	Prompt  llm.Message
	History []llm.Message
	System  string
	Tools   *tool.Registry
	Model   llm.Model
	// ModelID is the model's id at its provider, for engines that pick
	// their own model by name ("" lets the engine choose).
	ModelID string
	Options llm.Options
	Cwd     string
	// ToolPolicy is the run's tool policy, the one Tools was filtered by:
	// the engine's own tools answer to it too (ToolAllowed). nil: the run
	// has none, and the engine keeps all of its own tools.
	ToolPolicy *tool.Policy
	// Approval is the core's policy and asker: the harness asks it for
	// native actions too (the engine's permission requests), through
	// Attempt.Approve.
	Approval *tool.Approval
	// BeforeTool, when set, is the core's before-tool seam (PreToolUse
	// command hooks, then Approval, as for a built-in call): Approve puts
	// an engine's call to it instead of to Approval alone. AfterTool
	// receives the end of each call BeforeTool let through (PostToolUse).
	BeforeTool func(ctx context.Context, call tool.Call) (tool.Call, *tool.Result)
	AfterTool  func(ctx context.Context, call tool.Call, res tool.Result)
	// Emit receives the attempt's events, in order; nil drops them. An
	// assistant message_end whose Message.Usage is set reports the usage
	// of one native model call as the engine reports it, once per call
	// (the core counts it against the run's budgets as it comes, and stops
	// the turn, through ctx, when one is crossed).
	Emit func(agent.Event)
	// SetSteer, when set, is how a harness whose engine takes messages
	// mid-turn offers that while its turn runs: it calls SetSteer with the
	// delivery (true: the engine took the message) once the turn started
	// and with nil before RunAttempt returns. Without it Steer says false.
	SetSteer func(deliver func(msg llm.Message) bool)
	// Warn tells the user something about the attempt without ending it
	// (an engine that has gone quiet); nil drops it. It is called on the
	// goroutine that runs RunAttempt.
	Warn func(msg string)
	// Binding is the native session from the transcript; nil starts one.
	Binding *Binding
	// Continuation, on a retry, is what the failed attempt completed.
	Continuation *Continuation
	// Mirror appends a native item to the transcript (nil: not kept). It
	// reports whether the item was new.
	Mirror func(ctx context.Context, it Item) (appended bool, err error)
	// ObserveToolTerminal receives the end of every tool call (nil: the
	// attempt keeps its own Tracker).
	ObserveToolTerminal func(ToolTerminal) ToolResolution
}

// Approve puts an engine's tool call to the core before it runs: the
// before-tool seam when there is one, else the approval (nil allows). It
// returns the call as a hook may have rewritten it; an engine that cannot
// take rewritten arguments runs its own.
func (a *Attempt) Approve(ctx context.Context, call tool.Call) (out tool.Call, allow bool, reason string) {
	if a.BeforeTool != nil {
		c, res := a.BeforeTool(ctx, call)
		if res != nil {
			return call, false, res.Text()
		}
		return c, true, ""
	}
	if a.Approval == nil {
		return call, true, ""
	}
	allow, reason = a.Approval.Approve(ctx, call)
	return call, allow, reason
}

// ApproveAsAsked is Approve for an engine that runs the arguments it asked
// about, whatever a hook makes of them (pi, an ACP agent): a call a
// PreToolUse hook rewrote is refused, since the approval judged the
// rewrite while the engine would run the original.
func (a *Attempt) ApproveAsAsked(ctx context.Context, call tool.Call) (allow bool, reason string) {
	out, allow, reason := a.Approve(ctx, call)
	if allow && !sameJSON(out.Args, call.Args) {
		return false, fmt.Sprintf("Denied: a PreToolUse hook rewrote this %s call's arguments, and this engine can only run them as it asked (the rewrite cannot reach it). Do not retry it as it was.", call.Name)
	}
	return allow, reason
}

// sameJSON says a and b are the same JSON value (or the same bytes).
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// ToolDone reports the end of a call Approve let through to the core's
// after-tool seam; ran says whether the tool executed.
func (a *Attempt) ToolDone(ctx context.Context, call tool.Call, res tool.Result, ran bool) {
	if a.AfterTool != nil {
		a.AfterTool(tool.WithExecuted(ctx, ran), call, res)
	}
}

// Item is one mirrored message and its stable id.
type Item struct {
	MirrorID string
	Message  llm.Message
}

// Result is how an attempt ended.
type Result struct {
	// Items are the mirrored messages of the attempt, in order (the user
	// turn included when it was mirrored).
	Items      []Item
	StopReason llm.StopReason
	// Usage is the attempt's whole usage, what Emit reported included:
	// the core counts only what it holds beyond that.
	Usage llm.Usage
	// Err is a *llm.ProviderError, an *Error or a *BindingLostError.
	Err error
	// Binding, when set, is the native session to persist.
	Binding *Binding
	// SideEffects says the attempt acted: a tool that may change things
	// started, a message left the process, a session was spawned. Such an
	// attempt is never replayed, retried, or moved to another harness.
	SideEffects bool
	// PromptPersisted says the user turn was really appended to the
	// transcript by this attempt (not found there already, not lost).
	PromptPersisted bool
	// LastToolError is a failed mutating call no matching success cleared.
	LastToolError *ToolTerminal
	// Settled says the tools finished but the native turn ended without
	// assistant text: the core finalizes it (FinalizeSettledTurn).
	Settled bool
}

// Text returns the assistant text of the result's last assistant item.
func (r *Result) Text() string {
	for i := len(r.Items) - 1; i >= 0; i-- {
		if m := &r.Items[i].Message; m.Role == llm.RoleAssistant {
			if t := m.Text(); t != "" {
				return t
			}
		}
	}
	return ""
}

// Forgetter is a harness that can delete an engine's own session: when
// our session is deleted, the session it was bound to goes too.
type Forgetter interface {
	Forget(ctx context.Context, b Binding) error
}

// Binding is a native session an external engine owns.
type Binding struct {
	Harness, NativeID, Version, Cwd string
}

// PreflightError is a failure before any model work: the only failure
// that lets selection move on to the next harness.
type PreflightError struct {
	Harness string
	Err     error
}

func (e *PreflightError) Error() string {
	return fmt.Sprintf("harness %s cannot run this attempt: %v", e.Harness, e.Err)
}

func (e *PreflightError) Unwrap() error { return e.Err }

// Error is a harness failure after the attempt started.
type Error struct {
	Harness string
	// Reason is a short code: "disconnected", "exited", "protocol".
	Reason string
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("harness %s: %s: %v", e.Harness, e.Reason, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// ErrBindingLost says the native session a session is bound to is gone.
var ErrBindingLost = errors.New("the bound native session no longer exists")

// BindingLostError is ErrBindingLost for one session, with the way out.
type BindingLostError struct {
	Harness, NativeID, SessionID string
	Err                          error
}

func (e *BindingLostError) Error() string {
	s := fmt.Sprintf("the %s session %s this session was bound to no longer exists; start a new session or run `agentloop sessions unbind %s`",
		e.Harness, e.NativeID, orStr(e.SessionID, "<id>"))
	if e.Err != nil {
		s += fmt.Sprintf(" (%v)", e.Err)
	}
	return s
}

func (e *BindingLostError) Is(target error) bool { return target == ErrBindingLost }

func (e *BindingLostError) Unwrap() error { return e.Err }

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
