package agent

import (
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// The stop chain: what the loop does when a reply ends without tool calls,
// after steering and follow-ups (Claude Code's recovery chain):
//
//  1. a reply cut off at its output limit (stop reason length) is thrown
//     away once and asked again with the output limit raised to the
//     model's (up to EscalatedMaxTokens); the partial is withdrawn with a
//     retry_reset event and never reaches message_end;
//  2. cut off again (or nothing to raise), it is kept and a continuation
//     prompt asks the model to go on, at most MaxOutputContinuations times;
//  3. the Stop hook may keep the run going (MaxStopContinuations);
//  4. a token budget keeps it going while its output is under 90% of the
//     target, unless continuing stopped paying off;
//  5. the BeforeFinalize hook may ask for a revision
//     (MaxFinalizeRevisions);
//  6. otherwise the run ends.
//
// Each continuation is a stop_continuation event with its Reason.

// Stop-chain defaults and limits.
const (
	// EscalatedMaxTokens caps the raised output limit of a cut-off reply.
	EscalatedMaxTokens = 64_000
	// DefaultMaxOutputContinuations bounds the continuation prompts after
	// cut-off replies.
	DefaultMaxOutputContinuations = 3
	// DefaultMaxFinalizeRevisions bounds the revisions BeforeFinalize may
	// ask for in one run.
	DefaultMaxFinalizeRevisions = 3
	// TokenBudgetShare is the share of Config.TokenBudget under which the
	// run is kept going.
	TokenBudgetShare = 0.9
	// tokenBudgetMinDelta: after 3 budget continuations, one that added
	// fewer output tokens than this ends the run (diminishing returns).
	tokenBudgetMinDelta  = 500
	tokenBudgetMinRounds = 3
)

// The stop-chain event types.
const (
	// EventRetryReset withdraws the streamed partial of a reply cut off at
	// its output limit, which is asked again with a higher limit: Message is
	// the discarded partial (consumers drop what they showed of it), Usage
	// what it cost, Reason "max_tokens", Data {"maxTokens": the new limit}.
	EventRetryReset EventType = "retry_reset"
	// EventStopContinuation reports that the run goes on where it would
	// have stopped: Reason is ContinueMaxTokens, ContinueStopHook,
	// ContinueTokenBudget or ContinueRevision; Count and Max say how many so far and the bound.
	EventStopContinuation EventType = "stop_continuation"
)

// Why the stop chain kept a run going, in stop_continuation's Reason.
const (
	ContinueMaxTokens   = "max_tokens"
	ContinueStopHook    = "stop_hook"
	ContinueTokenBudget = "token_budget"
	ContinueRevision    = "finalize_revision"
)

// ContinuationPrompt is what the model is told after a reply cut off at
// its output limit.
const ContinuationPrompt = "Your last reply hit the output token limit and was cut off. Continue exactly where it stopped: " +
	"no apology and no recap. If much is left, do it in smaller pieces."

// stopHookNudge is the message of a Stop hook that keeps the run going
// without saying why.
const stopHookNudge = "A stop hook asked you to keep going: check whether the task is really finished, and continue if it is not."

// escalation returns the raised output limit for a reply cut off at its
// limit, or 0 when there is nothing to raise: the model's limit is not
// known, the request left the limit to the wire (which then uses the
// model's), or it already asked for as much.
func (r *run) escalation(m llm.Message) int {
	if m.StopReason != llm.StopReasonLength || r.escalated || r.cfg.MaxOutputTokens <= 0 {
		return 0
	}
	for _, c := range m.Content {
		if c.Type == llm.ContentToolCall {
			return 0 // its calls are answered instead; nothing is discarded
		}
	}
	cur := r.maxTokens()
	target := min(r.cfg.MaxOutputTokens, EscalatedMaxTokens)
	if cur <= 0 || cur >= target {
		return 0
	}
	return target
}

// maxTokens is the output limit the next call asks for.
func (r *run) maxTokens() int {
	if r.raisedMaxTokens > 0 {
		return r.raisedMaxTokens
	}
	return r.cfg.Options.MaxTokens
}

// resetCutOff withdraws a cut-off partial and raises the limit for the
// call that replaces it.
func (r *run) resetCutOff(m llm.Message, limit int) {
	r.escalated = true
	r.raisedMaxTokens = limit
	r.emit(Event{Type: EventRetryReset, Turn: r.turn, Message: &m, Usage: m.Usage, Reason: ContinueMaxTokens, MaxTokens: limit})
}

// continued reports a stop-chain continuation.
func (r *run) continued(reason string, count, limit int) {
	r.emit(Event{Type: EventStopContinuation, Turn: r.turn, Reason: reason, Count: count, Max: limit})
}

// cutOffContinuation returns the continuation prompt after a reply kept
// although it was cut off, or nil when it was not cut off or the bound is
// reached.
func (r *run) cutOffContinuation(out turnOut) []llm.Message {
	if out.calls > 0 || out.assistant.StopReason != llm.StopReasonLength ||
		r.cfg.MaxOutputContinuations < 0 || r.outputConts >= r.cfg.MaxOutputContinuations {
		return nil
	}
	r.outputConts++
	r.continued(ContinueMaxTokens, r.outputConts, r.cfg.MaxOutputContinuations)
	return []llm.Message{llm.UserText(ContinuationPrompt)}
}

// wouldStop runs the rest of the chain when the model is done and nothing
// is queued: the Stop hook, the token budget, BeforeFinalize. It returns
// the messages to go on with, or nil to end the run.
func (r *run) wouldStop() []llm.Message {
	if r.cfg.Hooks.Stop != nil && r.stopConts < r.cfg.MaxStopContinuations {
		var cont bool
		var inject []llm.Message
		r.callHook("stop", func() { cont, inject = r.cfg.Hooks.Stop(r.hookCtx, r.last) })
		if cont {
			r.stopConts++
			if len(inject) == 0 {
				inject = []llm.Message{llm.UserText(stopHookNudge)}
			}
			r.continued(ContinueStopHook, r.stopConts, r.cfg.MaxStopContinuations)
			return inject
		}
	}
	if msg := r.budgetContinuation(); msg != nil {
		return msg
	}
	if h := r.cfg.Hooks.BeforeFinalize; h != nil && r.cfg.MaxFinalizeRevisions > 0 && r.revisions < r.cfg.MaxFinalizeRevisions {
		var revise string
		r.callHook("before_agent_finalize", func() { revise = h(r.hookCtx, r.last) })
		if revise = strings.TrimSpace(revise); revise != "" {
			r.revisions++
			r.continued(ContinueRevision, r.revisions, r.cfg.MaxFinalizeRevisions)
			return []llm.Message{llm.UserText(revise)}
		}
	}
	return nil
}

// budgetContinuation keeps a run with a token budget going while its
// output is under TokenBudgetShare of the target, until continuing stops
// paying off (after 3 continuations, one that added under 500 tokens).
func (r *run) budgetContinuation() []llm.Message {
	budget := r.cfg.TokenBudget
	if budget <= 0 {
		return nil
	}
	used := r.usage.Output
	if float64(used) >= TokenBudgetShare*float64(budget) {
		return nil
	}
	if r.budgetConts >= tokenBudgetMinRounds && used-r.budgetMark < tokenBudgetMinDelta {
		return nil
	}
	r.budgetConts++
	r.budgetMark = used
	r.continued(ContinueTokenBudget, r.budgetConts, 0)
	return []llm.Message{llm.UserText(fmt.Sprintf(
		"You have used %d of a %d output token target (%d%%). Keep working on the task; do not summarise yet.",
		used, budget, used*100/budget))}
}
