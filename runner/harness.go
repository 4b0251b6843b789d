package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// Reason codes of a run on an external harness.
const (
	// ReasonBindingLost: the native session the session is bound to is
	// gone (harness.ErrBindingLost).
	ReasonBindingLost = "binding_lost"
	// ReasonIncompleteTurn: the attempt acted and then failed, or its turn
	// settled without an answer that finalization could give; it is not
	// replayed.
	ReasonIncompleteTurn = "incomplete_turn"
)

// external reports whether the run goes to an external harness.
func (s *run) external() bool {
	return s.p.Harness != nil && s.p.Harness.ID() != harness.BuiltinID
}

// binding reads the session's harness binding, and refuses a run on
// another external harness than the one the session is bound to (a bound
// session is pinned to its engine). The built-in loop may continue a
// mirrored session: the mirror is what makes switching back possible.
func (s *run) binding(ctx context.Context) (*harness.Binding, error) {
	if s.sess == nil || s.p.Store == nil {
		return nil, nil
	}
	t := s.sess.Transcript()
	if full, err := s.p.Store.Load(ctx, s.sess.ID()); err == nil {
		t = full // an open session may hold only its tail
	}
	e := t.Binding(s.sess.Leaf())
	if e == nil {
		return nil, nil
	}
	b := &harness.Binding{Harness: e.Harness, NativeID: e.NativeID, Version: e.Version, Cwd: e.Cwd}
	asked := harness.BuiltinID
	if s.p.Harness != nil {
		asked = s.p.Harness.ID()
	}
	if asked != b.Harness {
		return b, fmt.Errorf("session %s is bound to the %s session %s: run it with --harness %s, or run `agentloop sessions unbind %s` to continue here",
			s.sess.ID(), b.Harness, b.NativeID, b.Harness, s.sess.ID())
	}
	return b, nil
}

// runHarness runs the turn on the external harness: attempts until one
// succeeds, with a retry (carrying a continuation) only after a transient
// failure of an attempt that did not act, then the settled-turn
// finalization at most once.
//
// It returns the preflight error of a first attempt that never started
// (nothing was sent or mirrored) on a session without a binding: the one
// failure after which the turn may still run on the built-in loop.
func (s *run) runHarness(ctx context.Context, reg *tool.Registry, prompt llm.Message, history []llm.Message, seams *agent.Hooks) (Result, *harness.PreflightError) {
	h := s.p.Harness
	bound, err := s.binding(ctx)
	if err != nil {
		return Result{Reason: ReasonBindingLost, StopReason: llm.StopReasonError, Err: err, Message: err.Error()}, nil
	}
	policy := s.r.cfg.Retry
	if s.p.Retry != nil {
		policy = *s.p.Retry
	}
	if policy.Jitter == nil {
		policy.Jitter = jitter
	}
	attempts := policy.withDefaults().Attempts
	var mirror func(context.Context, harness.Item) (bool, error)
	if s.sess != nil {
		mirror = harness.SessionMirror(s.sess)
	}
	var added []llm.Message
	record := func(ctx context.Context, it harness.Item) (bool, error) {
		ok := true
		var err error
		if mirror != nil {
			ok, err = mirror(ctx, it)
		}
		if ok && err == nil {
			added = append(added, it.Message)
		}
		return ok, err
	}
	tracker := &harness.Tracker{}
	cwd := ""
	if s.sess != nil {
		cwd = s.sess.Header().Cwd
	}
	var cont *harness.Continuation
	retries := 0
	done := func(res Result) Result {
		res.Retries = retries
		s.tr.added = added
		return res
	}
	for {
		s.iterations++
		s.notice(EventAttemptStart, Notice{Attempt: s.iterations, Max: attempts + 1})
		meter := &engineMeter{s: s}
		a := &harness.Attempt{SessionID: s.h.sessionID, RunID: s.h.id, Attempt: s.iterations, Prompt: prompt,
			History: history, System: s.p.SystemPrompt, Tools: reg, Model: s.p.Model, ModelID: s.p.Info.ID, Options: s.p.Options, Cwd: cwd,
			Approval: s.p.Approval, Emit: meter.event, Warn: s.warn, Binding: bound, Continuation: cont, Mirror: record,
			ObserveToolTerminal: tracker.Observe}
		a.SetSteer = s.h.bindExternal
		a.ToolPolicy = s.p.ToolPolicy // the engine's own tools answer to it too
		if seams != nil {
			a.BeforeTool = seams.BeforeToolCall
			a.AfterTool = func(ctx context.Context, call tool.Call, res tool.Result) {
				if f := seams.AfterToolCall; f != nil {
					f(ctx, call, res)
				}
				// PostToolUse command hooks fire here. What they would add
				// to the result cannot reach the engine, which has it already.
				if f := seams.ToolResultPersist; f != nil {
					_ = f(ctx, call, res)
				}
			}
		}
		res, _, err := harness.Run(ctx, []harness.Harness{h}, a)
		if err == nil && res.Err != nil && errors.Is(res.Err, harness.ErrBindingLost) {
			err = res.Err
		}
		var pe *harness.PreflightError
		if errors.As(err, &pe) && s.iterations == 1 && bound == nil && len(added) == 0 && ctx.Err() == nil {
			s.iterations = 0
			return done(Result{Reason: string(llm.ReasonUnknown), StopReason: llm.StopReasonError, Err: err, Message: err.Error()}), pe
		}
		if err != nil {
			if ctx.Err() != nil {
				return done(s.stopped(ctx, Result{})), nil
			}
			reason := string(llm.ReasonOf(err))
			if errors.Is(err, harness.ErrBindingLost) {
				reason = ReasonBindingLost
			}
			return done(Result{Reason: orStr(reason, string(llm.ReasonUnknown)), StopReason: llm.StopReasonError, Err: err, Message: err.Error()}), nil
		}
		s.usage.Add(meter.rest(res.Usage))
		if ctx.Err() == nil {
			s.checkBudget(true) // the attempt is over: what it answered is kept
		}
		if b := res.Binding; b != nil && s.sess != nil && (bound == nil || *b != *bound) {
			// A new native session, or the same session under a new id
			// (a transfer): the last binding entry is the one in force.
			s.record(ctx, session.HarnessBindingEntry(b.Harness, b.NativeID, b.Version, b.Cwd))
			bound = b
		}
		if ctx.Err() != nil {
			return done(s.stopped(ctx, Result{StopReason: res.StopReason})), nil
		}
		if res.Err == nil {
			if res.Settled && res.Text() == "" {
				if s.beforeModelCall() != nil { // over budget: no finalization call
					return done(s.stopped(ctx, Result{StopReason: res.StopReason})), nil
				}
				return done(s.finalizeSettled(ctx, h, bound, history, prompt, res, record)), nil
			}
			return done(Result{Reason: ReasonStop, StopReason: orStop(res.StopReason)}), nil
		}
		failure := llm.ClassifyError(res.Err)
		msg := res.Err.Error()
		if res.SideEffects {
			// Never replayed: the attempt already acted.
			out := Result{Reason: ReasonIncompleteTurn, StopReason: llm.StopReasonError, Err: res.Err,
				Message: fmt.Sprintf("%s: the %s attempt already ran tools that may have changed things, so it is not retried; ask again to continue", msg, h.ID())}
			if te := res.LastToolError; te != nil {
				out.Message += fmt.Sprintf(" (the last failed call: %s %s)", te.Name, te.Error)
			}
			return done(out), nil
		}
		if !failure.Transient() || retries >= attempts {
			return done(Result{Reason: string(failure), StopReason: llm.StopReasonError, Err: res.Err, Message: orStr(failure.UserMessage(), msg)}), nil
		}
		if s.beforeModelCall() != nil { // over budget: no retry
			return done(s.stopped(ctx, Result{StopReason: llm.StopReasonError})), nil
		}
		retries++
		var own []llm.Message
		for _, it := range res.Items {
			if it.Message.Role != llm.RoleUser {
				own = append(own, it.Message)
			}
		}
		cont = harness.NewContinuation(prompt, own)
		d := policy.Backoff(retries, 0)
		s.notice(EventRetry, Notice{Reason: string(failure), Delay: d, Attempt: retries, Max: attempts,
			Message: fmt.Sprintf("%s: retrying on %s in %s (%d/%d)", msg, h.ID(), roundSec(d), retries, attempts)})
		if err := s.clock.Sleep(ctx, d); err != nil {
			return done(s.stopped(ctx, Result{})), nil
		}
	}
}

// finalizeSettled answers a native turn whose tools finished without an
// answer: one isolated model call, no tools, no hooks, on the transcript
// frozen at the settled boundary; if it fails the run ends with the
// incomplete-turn warning instead of repeating side effects.
func (s *run) finalizeSettled(ctx context.Context, h harness.Harness, bound *harness.Binding, history []llm.Message, prompt llm.Message,
	res *harness.Result, record func(context.Context, harness.Item) (bool, error)) Result {
	frozen := append(append([]llm.Message(nil), history...), prompt)
	for _, it := range res.Items {
		if it.Message.Role != llm.RoleUser {
			frozen = append(frozen, it.Message)
		}
	}
	msg, err := harness.FinalizeSettledTurn(ctx, s.p.Model, s.p.SystemPrompt, frozen, s.p.Options)
	if err != nil {
		s.warn(harness.IncompleteTurnMessage)
		return Result{Reason: ReasonIncompleteTurn, StopReason: llm.StopReasonError, Err: err, Message: harness.IncompleteTurnMessage}
	}
	if msg.Usage != nil {
		s.usage.Add(*msg.Usage)
	}
	thread := s.h.id
	if bound != nil {
		thread = bound.NativeID
	}
	if _, err := record(ctx, harness.Item{MirrorID: harness.MirrorID(h.ID(), thread, s.h.id, "final"), Message: msg}); err != nil {
		s.warn(fmt.Sprintf("recording the final answer: %v", err))
	}
	harness.EmitMessage(s.emitAgent, msg)
	return Result{Reason: ReasonStop, StopReason: llm.StopReasonStop}
}

func orStop(r llm.StopReason) llm.StopReason {
	if r == "" {
		return llm.StopReasonStop
	}
	return r
}
