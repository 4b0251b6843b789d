package main

import (
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/runner"
)

// promptGate holds back, in text mode, what UserPromptSubmit hooks say
// until the run shows whether they refused the prompt: a refusal is then
// said once, in the run's last line, rather than once as the hook's
// message and again as the reason the run ended.
type promptGate struct {
	next func(runner.Event)
	held []runner.Event
	done bool // the prompt went through: nothing more to hold
}

func (g *promptGate) event(ev runner.Event) {
	if g.done {
		g.next(ev)
		return
	}
	switch ev.Type {
	case runner.EventRunStart: // comes before the prompt hooks
		g.next(ev)
		return
	case runner.EventHookMessage:
		if ev.Notice != nil && ev.Notice.Reason == string(hook.UserPromptSubmit) {
			g.held = append(g.held, ev)
			return
		}
	case runner.EventRunEnd:
		if ev.End != nil && ev.End.Reason == runner.ReasonPromptBlocked {
			g.held = nil
			g.next(ev)
			return
		}
	}
	g.done = true
	for _, h := range g.held {
		g.next(h)
	}
	g.held = nil
	g.next(ev)
}

// blockedPrompt is how `agentloop run` ends when a UserPromptSubmit hook
// refused the prompt: one line saying so and why. Nothing reached the
// model and, for a new session, nothing was kept, so no session id is
// shown for it.
func blockedPrompt(res runner.Result) error {
	msg := "a UserPromptSubmit hook refused the prompt; nothing was sent to the model"
	if res.Message != "" && res.Message != "a UserPromptSubmit hook refused the prompt" {
		msg = "a UserPromptSubmit hook refused the prompt: " + res.Message + " (nothing was sent to the model)"
	}
	return exitError{code: exitFailed, msg: msg}
}
