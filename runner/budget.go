package runner

import (
	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// checkBudget stops the run once it has crossed a budget. A final reply
// (the answer, with no tool call) that crosses it is kept and the run ends
// normally, with a warning: the money is spent and the answer is there.
// Only if something would call the model again (a Stop hook, a follow-up)
// is the run stopped, before that call (see beforeModelCall).
func (s *run) checkBudget(final bool) {
	be := s.crossed()
	switch {
	case be == nil:
	case final:
		if s.overBudget == nil {
			s.overBudget = be
			s.warn(be.Error() + " with its final reply; the reply is kept")
		}
	default:
		s.cancel(be)
	}
}

// crossed returns the budget the run's usage so far is over, or nil.
func (s *run) crossed() *BudgetError {
	if s.p.MaxCost > 0 && s.usage.Cost.Total > s.p.MaxCost {
		return &BudgetError{Kind: ReasonBudgetCost, Limit: s.p.MaxCost, Used: s.usage.Cost.Total}
	}
	if s.p.MaxTokens > 0 {
		u := s.usage
		if used := u.Input + u.Output + u.CacheRead + u.CacheWrite; used > s.p.MaxTokens {
			return &BudgetError{Kind: ReasonBudgetTokens, Limit: float64(s.p.MaxTokens), Used: float64(used)}
		}
	}
	return nil
}

// beforeModelCall stops a run that crossed a budget with what looked like
// its final reply, when something asks the model for more anyway.
func (s *run) beforeModelCall() error {
	if s.overBudget != nil {
		s.cancel(s.overBudget)
		return s.overBudget
	}
	return nil
}

// finalReply reports whether m ends the run as far as the model is
// concerned: a complete answer that calls no tool.
func finalReply(m llm.Message) bool {
	return m.StopReason == llm.StopReasonStop && len(m.ToolCalls()) == 0
}

// engineMeter counts an external engine's usage as the engine reports it
// during its turn, so that a budget binds there as it does on the built-in
// loop, not only after the whole native turn. Its event is the attempt's
// Emit: an assistant message_end that carries usage (a harness puts it on
// one message per native model call) is priced, added to the run's usage
// and checked. Crossed by a message that calls tools, the run's context is
// cancelled with the budget, and the harness stops its engine as on abort.
// Crossed by a reply that calls none, the reply is kept as the built-in
// loop keeps a final reply, unless the engine goes on: a tool starts or the
// model is called again.
type engineMeter struct {
	s *run
	// streamed is what the events reported, priced.
	streamed llm.Usage
	// over is the budget the streamed usage crossed.
	over *BudgetError
}

func (m *engineMeter) event(ev agent.Event) {
	s := m.s
	goesOn := ev.Type == agent.EventToolExecutionStart
	if ev.Type == agent.EventMessageEnd && ev.Message != nil && ev.Message.Role == llm.RoleAssistant {
		msg := *ev.Message
		goesOn = len(msg.ToolCalls()) > 0 || (msg.Usage != nil && m.over != nil)
		if msg.Usage != nil {
			u := s.price(*msg.Usage)
			msg.Usage = &u
			ev.Message = &msg // the event shows what the run counts
			s.usage.Add(u)
			m.streamed.Add(u)
			if m.over == nil {
				m.over = s.crossed()
			}
		}
	}
	if m.over != nil && goesOn {
		s.cancel(m.over)
	}
	s.emitAgent(ev)
}

// rest returns what total, the attempt's whole usage as its harness reports
// it at the end (Claude Code's result totals), holds beyond what the events
// already reported, so that nothing is counted twice.
func (m *engineMeter) rest(total llm.Usage) llm.Usage {
	t, st := m.s.price(total), m.streamed
	return llm.Usage{Input: max(t.Input-st.Input, 0), Output: max(t.Output-st.Output, 0),
		CacheRead: max(t.CacheRead-st.CacheRead, 0), CacheWrite: max(t.CacheWrite-st.CacheWrite, 0), Total: max(t.Total-st.Total, 0),
		Cost: llm.Cost{Input: max(t.Cost.Input-st.Cost.Input, 0), Output: max(t.Cost.Output-st.Cost.Output, 0),
			CacheRead: max(t.Cost.CacheRead-st.Cost.CacheRead, 0), CacheWrite: max(t.Cost.CacheWrite-st.Cost.CacheWrite, 0),
			Total: max(t.Cost.Total-st.Cost.Total, 0)}}
}

// price sets the cost of an engine's usage from the run's model prices,
// as the built-in loop's providers price theirs, so --max-cost means the
// same on every harness. Only for a model without prices does the engine's
// own figure stand (pi's per message, Claude Code's total_cost_usd at the
// end of its turn).
func (s *run) price(u llm.Usage) llm.Usage {
	if p := s.p.Info.Cost; p != (llm.Prices{}) {
		u.ApplyPrices(p)
	}
	return u
}
