package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
)

// reportHook routes a hook's notice into the run's events.
func (s *run) reportHook(ctx context.Context, n hook.Notice) {
	if n.Kind == hook.NoticeMessage {
		s.notice(EventHookMessage, Notice{Message: n.Text, Reason: string(n.Point)})
		return
	}
	// Text says which hook and what it printed ("exit status 1" alone
	// would not); Err stays in the chain for errors.Is.
	err := n.Err
	switch {
	case err == nil:
		err = errors.New(n.Text)
	case n.Text != "" && !strings.Contains(n.Text, err.Error()):
		err = fmt.Errorf("%s: %w", n.Text, err)
	case n.Text != "":
		err = textError{text: n.Text, err: err}
	}
	if a := s.h.current(); a == nil || !a.ReportHookError(string(n.Point), err) {
		s.emitAgent(agent.Event{Type: agent.EventHookError, Hook: string(n.Point), Err: err})
	}
}

// textError shows a notice's full text while keeping its error for
// errors.Is and errors.As.
type textError struct {
	text string
	err  error
}

func (e textError) Error() string { return e.text }

func (e textError) Unwrap() error { return e.err }

// finalizeRevisionNudge is the instruction of a before_agent_finalize hook
// that asks for a revision without saying what to change.
const finalizeRevisionNudge = "A before_agent_finalize hook asked you to revise your answer before it is final."

// finalizeOnce binds before_agent_finalize so that it fires exactly once
// each time the run is about to end. The bus's Stop seam asks it already
// when no stop hook keeps the run going; but once the agent's stop
// continuations are spent it no longer calls Stop, and the finalize hooks
// would never hear of the real end. BeforeFinalize asks them then, and
// only then: when the Stop seam just ran and let the run end, they have
// already answered.
func finalizeOnce(bus *hook.Bus, stop func(context.Context, llm.Message) (bool, []llm.Message)) (
	func(context.Context, llm.Message) (bool, []llm.Message), func(context.Context, llm.Message) string) {
	var asked bool // the agent calls both from its loop goroutine
	onStop := func(ctx context.Context, last llm.Message) (bool, []llm.Message) {
		asked = false // stays false if stop panics
		cont, inject := stop(ctx, last)
		asked = !cont
		return cont, inject
	}
	onFinalize := func(ctx context.Context, last llm.Message) string {
		if asked {
			asked = false
			return ""
		}
		out := bus.BeforeAgentFinalize(ctx, hook.BeforeAgentFinalizeInput{Last: last})
		if out.Action != hook.FinalizeContinue && out.Action != hook.FinalizeRevise {
			return ""
		}
		texts := []string{out.Reason}
		for _, m := range out.Messages {
			texts = append(texts, m.Text())
		}
		if t := joinNonEmpty(texts...); t != "" {
			return t
		}
		return finalizeRevisionNudge
	}
	return onStop, onFinalize
}

func joinNonEmpty(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += "\n\n"
		}
		out += p
	}
	return out
}

// bindBus is the run's hook bus: the caller's (Config.Bus), with the
// command hooks of Config.Hooks loaded for this session, and the Go hooks
// of Config.RegisterHooks, on a bus derived for the run (never on the
// caller's, which may serve many runs). Hook notices become the run's
// events. It is nil when the run has no hooks.
func (s *run) bindBus(sessionID, transcript string) (*hook.Bus, error) {
	bus := s.p.Bus
	if s.p.Hooks != nil {
		lo := *s.p.Hooks
		lo.SessionID, lo.TranscriptPath = sessionID, transcript
		bo := hook.Options{}
		if lo.BusOptions != nil {
			bo = *lo.BusOptions
		}
		bo.Report = s.reportHook
		lo.BusOptions = &bo
		lo.Bus = bus
		b, warns, err := hook.Load(lo)
		if err != nil {
			return nil, err
		}
		bus = b
		for _, w := range warns {
			s.warn(w)
		}
	}
	if s.p.RegisterHooks != nil {
		switch {
		case bus == nil:
			bus = hook.New(&hook.Options{Report: s.reportHook})
		case bus == s.p.Bus:
			// The caller's bus may serve many runs: this run's Go hooks go
			// on a bus derived from it, or every run would add its own to
			// the shared one and they would pile up.
			bus = bus.Derive()
		}
		s.p.RegisterHooks(bus)
	}
	return bus, nil
}
