package runner

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/tool"
)

// bindLoopGuard puts loop detection first among the tool hooks: a call it
// refuses never reaches the user's hooks or the approval question, and its
// warning is appended last, after every rewrite of the result.
func (s *run) bindLoopGuard(h *agent.Hooks) {
	cfg := loopguard.Config{}
	if s.p.LoopGuard != nil {
		cfg = *s.p.LoopGuard
	}
	user := cfg.OnEvent
	cfg.OnEvent = func(ev loopguard.Event) {
		// The event names its call, so a display can show the detection on
		// the call's own line.
		s.emit(Event{Type: EventLoopDetected, Loop: &ev, Notice: &Notice{Reason: string(ev.Kind),
			Message: fmt.Sprintf("loop detection (%s, %s): %s", ev.Kind, ev.Tool, ev.Detection.Message), Attempt: ev.Detection.Count}})
		if user != nil {
			user(ev)
		}
	}
	g := loopguard.New(&cfg).Hooks(func(err error) { s.cancel(err) })
	before, after, persist := h.BeforeToolCall, h.AfterToolCall, h.ToolResultPersist
	h.BeforeToolCall = func(ctx context.Context, call tool.Call) (tool.Call, *tool.Result) {
		call, res := g.BeforeToolCall(ctx, call)
		if res != nil || before == nil {
			return call, res
		}
		return before(ctx, call)
	}
	h.AfterToolCall = func(ctx context.Context, call tool.Call, res tool.Result) {
		g.AfterToolCall(ctx, call, res)
		if after != nil {
			after(ctx, call, res)
		}
	}
	h.ToolResultPersist = func(ctx context.Context, call tool.Call, res tool.Result) tool.Result {
		if persist != nil {
			res = persist(ctx, call, res)
		}
		return g.ToolResultPersist(ctx, call, res)
	}
}
