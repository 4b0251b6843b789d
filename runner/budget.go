package runner

import "github.com/agentloop/agentloop/llm"

// checkBudget stops the run once it has crossed a budget. A final reply
// (the answer, with no tool call) that crosses it is kept and the run ends
// normally, with a warning: the money is spent and the answer is there.
// Only if something would call the model again (a Stop hook, a follow-up)
// is the run stopped, before that call (see beforeModelCall).
func (s *run) checkBudget(final bool) {
	var be *BudgetError
	if s.p.MaxCost > 0 && s.usage.Cost.Total > s.p.MaxCost {
		be = &BudgetError{Kind: ReasonBudgetCost, Limit: s.p.MaxCost, Used: s.usage.Cost.Total}
	} else if s.p.MaxTokens > 0 {
		u := s.usage
		if used := u.Input + u.Output + u.CacheRead + u.CacheWrite; used > s.p.MaxTokens {
			be = &BudgetError{Kind: ReasonBudgetTokens, Limit: float64(s.p.MaxTokens), Used: float64(used)}
		}
	}
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
