package runner

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentloop/agentloop/failover"
	"github.com/agentloop/agentloop/llm"
)

// Loop limits of a run (reference: the outer retry loop's constants).
const (
	// MaxOverflowCompactions is how many times a context overflow is
	// answered with a compaction before the run tries truncation.
	MaxOverflowCompactions = 3
	// MaxTimeoutCompactions is how many times a timed-out call with a big
	// prompt is answered with a compaction.
	MaxTimeoutCompactions = 2
	// TimeoutCompactionRatio is the share of the window the last prompt
	// must exceed for a timeout to be answered with a compaction.
	TimeoutCompactionRatio = 0.65

	// DefaultRetryAttempts is how many times a transient failure is retried.
	DefaultRetryAttempts = 3
	// DefaultRetryBase is the first backoff wait; it doubles per retry.
	DefaultRetryBase = 2 * time.Second
	// DefaultRetryMax caps one backoff wait, Retry-After included.
	DefaultRetryMax = 60 * time.Second

	// DefaultRunTimeout bounds a run; it is extended once by the compaction
	// timeout when it expires while a compaction is in flight.
	DefaultRunTimeout = 600 * time.Second
	// DefaultCompactionTimeout is that one extension.
	DefaultCompactionTimeout = 900 * time.Second
	// DefaultIdleTimeout is the per-call idle timeout of the wire packages.
	DefaultIdleTimeout = 120 * time.Second
	// MaxTimerDuration is the largest timer a timeout is clamped to; a run
	// timeout at least this long disables the idle timeout.
	MaxTimerDuration = 2_147_000_000 * time.Millisecond
)

// overflowUserMessage is what a user reads when the context could not be
// brought under the model's window.
const overflowUserMessage = "The conversation is too large for the model's context window, even after compaction and shortening tool results. " +
	"Compact it (agentloop compact) or start a new session, or use a model with a larger context window."

// retryLimitUserMessage is what a user reads when the run hit its iteration cap.
const retryLimitUserMessage = "The request failed after repeated internal retries. Try again, or start a new session."

// cascadeAction is what the runner does after an attempt.
type cascadeAction string

// The actions, in the order the cascade considers them.
const (
	// actFinish ends the run with the attempt's outcome (success, max
	// turns, abort).
	actFinish cascadeAction = "finish"
	// actTimeoutCompact compacts a big prompt after a timed-out call,
	// then retries.
	actTimeoutCompact cascadeAction = "timeout_compaction"
	// actOverflowRetry retries an overflow without compacting again: the
	// attempt already compacted.
	actOverflowRetry cascadeAction = "overflow_retry"
	// actCompact compacts after a context overflow, then retries.
	actCompact cascadeAction = "compaction_retry"
	// actTruncate shortens oversized tool results once, then retries.
	actTruncate cascadeAction = "truncation_retry"
	// actRotateProfile retries on the next auth profile.
	actRotateProfile cascadeAction = "rotate_profile"
	// actFallbackModel retries on the next fallback model.
	actFallbackModel cascadeAction = "model_fallback"
	// actThinkingFallback retries at the thinking level cascadeDecision.Thinking
	// the provider will accept.
	actThinkingFallback cascadeAction = "thinking_fallback"
	// actRetry waits Delay and retries the same model.
	actRetry cascadeAction = "retry"
	// actFail ends the run with Reason and Message.
	actFail cascadeAction = "fail"
)

// attemptOutcome is how one attempt ended, as the cascade reads it.
type attemptOutcome struct {
	// End is the agent's reason: stop, max_turns, aborted or error.
	End string
	// Failure is the classified reason of a failed model call ("" when the
	// attempt did not fail on the model).
	Failure llm.Reason
	// RetryAfter is the wait the provider asked for.
	RetryAfter time.Duration
	// Compacted is set when the attempt compacted on its own (precheck).
	Compacted bool
	// PromptTokens is the prompt size of the attempt's last model call.
	PromptTokens int
	// Message is the failure's text, read for a refused thinking level.
	Message string
	// Err is the attempt's error, for messages.
	Err error
}

// cascadeState is what the run has done so far.
type cascadeState struct {
	Window              int
	Profiles            int
	OverflowCompactions int
	TimeoutCompactions  int
	TruncationTried     bool
	// Retries counts transient retries since the last success.
	Retries int
	// ProfilesLeft counts the auth profiles not tried yet in this run.
	ProfilesLeft int
	// FallbacksLeft counts the fallback models not tried yet.
	FallbacksLeft int
	// AttemptedThinking lists the thinking levels tried, the current one
	// included.
	AttemptedThinking []llm.ThinkingLevel
	// RateLimitRotations and OverloadRotations count the profile
	// rotations made for those reasons.
	RateLimitRotations, OverloadRotations int
}

// RetryPolicy shapes the waits between transient retries. Zero values mean
// the defaults.
type RetryPolicy struct {
	Attempts int
	Base     time.Duration
	Max      time.Duration
	// Jitter returns a number in [0, 1); nil means no jitter (tests), the
	// runner sets a random source.
	Jitter func() float64
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts == 0 {
		p.Attempts = DefaultRetryAttempts
	}
	if p.Base <= 0 {
		p.Base = DefaultRetryBase
	}
	if p.Max <= 0 {
		p.Max = DefaultRetryMax
	}
	return p
}

// Backoff returns the wait before retry n (1-based): Base doubled per
// retry plus up to 25% jitter, capped at Max. A Retry-After from the
// provider replaces it when longer.
func (p RetryPolicy) Backoff(n int, retryAfter time.Duration) time.Duration {
	p = p.withDefaults()
	d := float64(p.Base) * math.Pow(2, float64(max(0, n-1)))
	if p.Jitter != nil {
		d += d * 0.25 * p.Jitter()
	}
	wait := time.Duration(min(d, float64(p.Max)))
	if retryAfter > wait {
		wait = min(retryAfter, p.Max)
	}
	return wait
}

// cascadeDecision is the cascade's answer.
type cascadeDecision struct {
	Action cascadeAction
	// Reason is the reason code: the failure reason for a retry or a
	// failure; for actFinish the agent's end reason.
	Reason string
	// Delay is the wait before a retry.
	Delay time.Duration
	// Message is a sentence for people (the event line, or the user error).
	Message string
	// Thinking is the level to retry with, for actThinkingFallback.
	Thinking llm.ThinkingLevel
	// Mark says to record the failure against the current auth profile.
	Mark bool
}

// decide is the decision cascade after an attempt, in the reference order
// (first match wins):
//
//  1. not a failure (stop, max_turns) or an abort: finish;
//  2. a timeout with the last prompt over 65% of the window, fewer than 2
//     timeout compactions: compact and retry;
//  3. a context overflow: retry without compacting when the attempt already
//     compacted, else compact (up to 3 times in all), then shorten tool
//     results once, then fail with overflowUserMessage. An overflow never
//     rotates a profile or falls back to another model;
//  4. everything else is package failover's cascade (failover.Next): the
//     next auth profile for a failure of the credentials (a rate limit at
//     once, a transient failure once its retries are used up), a thinking
//     level the provider accepts, a same-model retry for a transient
//     failure (after Backoff, honouring a Retry-After up to Max), the next
//     fallback model, else the failure with its reason's user message.
//
// decide is pure: the caller applies the decision and updates cascadeState.
func decide(o attemptOutcome, s cascadeState, p RetryPolicy) cascadeDecision {
	p = p.withDefaults()
	switch {
	case o.End != "error":
		return cascadeDecision{Action: actFinish, Reason: o.End}
	}
	reason := o.Failure
	if reason == "" {
		reason = llm.ReasonUnknown
	}
	if reason == llm.ReasonTimeout && s.Window > 0 && s.TimeoutCompactions < MaxTimeoutCompactions &&
		float64(o.PromptTokens)/float64(s.Window) > TimeoutCompactionRatio {
		return cascadeDecision{Action: actTimeoutCompact, Reason: string(reason),
			Message: fmt.Sprintf("the model call timed out with a large prompt (%d of %d tokens): compacting and retrying", o.PromptTokens, s.Window)}
	}
	if reason == llm.ReasonContextOverflow {
		switch {
		case o.Compacted && s.OverflowCompactions < MaxOverflowCompactions:
			return cascadeDecision{Action: actOverflowRetry, Reason: string(reason),
				Message: fmt.Sprintf("context overflow after this attempt's own compaction: retrying without compacting again (%d/%d)", s.OverflowCompactions+1, MaxOverflowCompactions)}
		case s.OverflowCompactions < MaxOverflowCompactions:
			return cascadeDecision{Action: actCompact, Reason: string(reason),
				Message: fmt.Sprintf("context overflow: compacting and retrying (%d/%d)", s.OverflowCompactions+1, MaxOverflowCompactions)}
		case !s.TruncationTried:
			return cascadeDecision{Action: actTruncate, Reason: string(reason),
				Message: "context overflow after compaction: shortening large tool results and retrying"}
		}
		return cascadeDecision{Action: actFail, Reason: string(reason), Message: overflowUserMessage}
	}
	// The rest is package failover's cascade (credential, thinking level,
	// same-model retry, fallback model); the runner adds the waits.
	plan := failover.Next(failover.Failure{Reason: reason, Message: o.Message, RetryAfter: o.RetryAfter}, failover.State{
		ProfilesLeft: s.ProfilesLeft, RetriesExhausted: s.Retries >= p.Attempts, AttemptedThinking: s.AttemptedThinking,
		FallbackConfigured: s.FallbacksLeft > 0, RateLimitRotations: s.RateLimitRotations, OverloadRotations: s.OverloadRotations,
		MaxWait: p.Max,
	})
	d := cascadeDecision{Reason: string(reason), Mark: plan.Mark}
	switch plan.Step {
	case failover.StepRotateProfile:
		d.Action = actRotateProfile
		d.Message = fmt.Sprintf("%s: switching to the next auth profile", failover.Words(reason))
	case failover.StepLowerThinking:
		d.Action, d.Thinking = actThinkingFallback, plan.Thinking
		d.Message = fmt.Sprintf("the model refused the thinking level: retrying with thinking %s", plan.Thinking)
	case failover.StepRetry:
		n := s.Retries + 1
		d.Action, d.Delay = actRetry, p.Backoff(n, o.RetryAfter)
		d.Message = fmt.Sprintf("%s: retrying in %s (%d/%d)", failover.Words(reason), roundSec(d.Delay), n, p.Attempts)
	case failover.StepFallbackModel:
		why := ""
		switch {
		case o.RetryAfter > p.Max:
			why = " for " + roundSec(o.RetryAfter)
		case reason.Transient() && s.Retries >= p.Attempts:
			why = fmt.Sprintf(" after %d retries", s.Retries)
		}
		d.Action = actFallbackModel
		d.Message = fmt.Sprintf("%s%s: switching to the next fallback model", failover.Words(reason), why)
	default:
		d.Action, d.Message = actFail, reason.UserMessage()
		if errors.Is(o.Err, llm.ErrResponseTooLarge) {
			d.Message = llm.ErrorText(o.Err)
		}
		switch reason {
		case llm.ReasonBilling, llm.ReasonAuth, llm.ReasonAuthPermanent:
			// Whose account, which model, and whether it was a key or a
			// sign-in that failed: the error knows.
			var pe *llm.ProviderError
			if errors.As(o.Err, &pe) {
				d.Message = llm.ErrorText(pe)
			}
		}
		switch {
		case o.RetryAfter > p.Max:
			d.Message = fmt.Sprintf("%s (the provider asked to wait %s, longer than the %s the run waits)", reason.UserMessage(), roundSec(o.RetryAfter), roundSec(p.Max))
		case reason.Transient() && s.Retries >= p.Attempts:
			d.Message = fmt.Sprintf("%s (gave up after %d retries)", reason.UserMessage(), s.Retries)
		}
	}
	return d
}

func roundSec(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// timeoutAction is what a run timeout does when it fires.
type timeoutAction string

// The run-timeout actions.
const (
	timeoutAbort  timeoutAction = "abort"
	timeoutExtend timeoutAction = "extend"
)

// runTimeoutDuringCompaction decides what a run timeout that fires does:
// extend once (by the compaction timeout) when a compaction is pending or in
// flight and the grace was not used yet, otherwise abort.
func runTimeoutDuringCompaction(compacting, graceUsed bool) timeoutAction {
	if compacting && !graceUsed {
		return timeoutExtend
	}
	return timeoutAbort
}

// runTimeoutWithCompactionGrace is the longest a run may take: its timeout
// plus one compaction timeout.
func runTimeoutWithCompactionGrace(run, compaction time.Duration) time.Duration {
	return run + compaction
}

// ResolveIdleTimeout returns the per-call idle timeout of a run: the
// configured idle timeout (0 disables; clamped to MaxTimerDuration), else
// a run timeout that differs from the configured one (at least
// MaxTimerDuration disables), else the configured run timeout, else 0 for
// cron runs, else DefaultIdleTimeout. A negative configured value means unset.
func ResolveIdleTimeout(idle, runTimeout, configuredRunTimeout time.Duration, lane string) time.Duration {
	switch {
	case idle == 0:
		return 0
	case idle > 0:
		return min(idle, MaxTimerDuration)
	case runTimeout > 0 && runTimeout != configuredRunTimeout:
		if runTimeout >= MaxTimerDuration {
			return 0
		}
		return runTimeout
	case configuredRunTimeout > 0:
		return min(configuredRunTimeout, MaxTimerDuration)
	case lane == LaneCron:
		return 0
	}
	return DefaultIdleTimeout
}

// idleTimeoutMessage is the error text of a call that produced nothing for
// the idle timeout.
func idleTimeoutMessage(d time.Duration) string {
	return fmt.Sprintf("LLM idle timeout (%ds): no response from model", int(d/time.Second))
}

// flagCompactionTimeout reports whether a timeout counts as one that came
// during compaction: the run timed out while a compaction was pending,
// retrying or in flight. Such a run is not retried (its state is unsure).
func flagCompactionTimeout(timedOut, compacting bool) bool {
	return timedOut && compacting
}
