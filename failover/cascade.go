package failover

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Limits of the cascade.
const (
	// MaxRetryAfterWait is the longest Retry-After a run waits for on the
	// same credential; a longer one rotates (or fails over) instead.
	MaxRetryAfterWait = 60 * time.Second
	// DefaultMaxRotations is how many times a run rotates profiles for a
	// rate limit (or an overload) before, with a fallback model configured,
	// it moves to that model instead.
	DefaultMaxRotations = 1
)

// Step is what Next tells the runner to do after a failed attempt.
type Step string

// The steps of Next, in the order the cascade considers them.
const (
	// StepNone: not a failover matter; the runner's own cascade decides
	// (context overflow goes to compaction and never fails over).
	StepNone Step = "none"
	// StepSurface ends the run with the error.
	StepSurface Step = "surface_error"
	// StepRefreshAuth refreshes the current profile's credential once and
	// retries.
	StepRefreshAuth Step = "refresh_auth"
	// StepRotateProfile retries at once with the next usable auth profile.
	StepRotateProfile Step = "rotate_profile"
	// StepLowerThinking retries with Plan.Thinking.
	StepLowerThinking Step = "lower_thinking"
	// StepRetry retries the same model and profile after the runner's
	// backoff (honouring Retry-After).
	StepRetry Step = "retry"
	// StepFallbackModel ends this model's part of the run with a
	// *FailoverError; the next model of the chain takes over.
	StepFallbackModel Step = "fallback_model"
)

// Failure is a failed attempt as the cascade reads it.
type Failure struct {
	Reason llm.Reason
	// Message is the error text (read for unsupported thinking levels).
	Message string
	// RetryAfter is the wait the provider asked for.
	RetryAfter time.Duration
	// ExternalAbort is set when the caller aborted the run.
	ExternalAbort bool
}

// FailureOf reads a Failure from an attempt's error: the reason and
// Retry-After of its *llm.ProviderError when it has one, else what
// llm.ClassifyError says. A cancelled context is an external abort.
func FailureOf(err error) Failure {
	f := Failure{Reason: llm.ClassifyError(err)}
	if err == nil {
		return f
	}
	f.Message = err.Error()
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		f.RetryAfter = pe.RetryAfter
		if pe.Message != "" {
			f.Message = pe.Message
		}
	}
	if f.Reason == "" {
		f.ExternalAbort = true
	}
	return f
}

// State is what the run has left and has done, as the cascade needs it.
type State struct {
	// CanRefreshAuth says the current credential can be refreshed (an OAuth
	// token); AuthRefreshed that it was refreshed for this failure already.
	CanRefreshAuth bool
	AuthRefreshed  bool
	// ProfilesLeft counts the usable auth profiles other than the current
	// one (package auth: Store.Usable).
	ProfilesLeft int
	// RetriesExhausted says the runner's same-model retries are used up.
	RetriesExhausted bool
	// AttemptedThinking lists the thinking levels tried in this run,
	// the current one included.
	AttemptedThinking []llm.ThinkingLevel
	// FallbackConfigured says another model is left in the chain.
	FallbackConfigured bool
	// RateLimitRotations and OverloadRotations count the rotations already
	// made for these reasons in this run.
	RateLimitRotations int
	OverloadRotations  int
	// MaxRotations caps them (0 means DefaultMaxRotations) when a fallback
	// is configured.
	MaxRotations int
	// MaxWait is the longest Retry-After waited for (0 means
	// MaxRetryAfterWait).
	MaxWait time.Duration
}

// Plan is Next's answer.
type Plan struct {
	Step   Step
	Reason llm.Reason
	// Thinking is the level to retry with (StepLowerThinking).
	Thinking llm.ThinkingLevel
	// Mark says to record the failure on the current profile (auth:
	// Store.MarkFailure) before acting. Timeouts, network and server
	// failures never mark a profile; neither do failures of the request
	// itself (format, overflow), which another credential would repeat.
	Mark bool
	// Message says in a sentence why, for the runner's event.
	Message string
}

// credentialReasons are the failures another credential of the same
// provider may not have.
func credentialReason(r llm.Reason) bool {
	switch r {
	case llm.ReasonAuth, llm.ReasonAuthPermanent, llm.ReasonBilling, llm.ReasonRateLimit, llm.ReasonModelNotFound:
		return true
	}
	return false
}

// marks reports whether a failure of reason r is recorded on the profile.
func marks(r llm.Reason) bool {
	return credentialReason(r) || r == llm.ReasonOverloaded
}

// Next is the cascade after a failed attempt, in reference §3.3/§3.5
// order (first match wins):
//
//  1. an external abort surfaces the error; a context overflow is StepNone
//     (compaction's business: an overflow never fails over);
//  2. an auth failure whose credential can be refreshed, not refreshed yet
//     for this failure: StepRefreshAuth;
//  3. the next auth profile, when one is usable and the failure is tied to
//     the credential (auth, auth_permanent, billing, rate_limit,
//     model_not_found) or is transient but not worth waiting for (a
//     Retry-After over MaxWait, or retries used up). A rate limit rotates at
//     once; after MaxRotations rate-limit (or overload) rotations, with a
//     fallback configured, the run moves to the next model instead;
//  4. a lower thinking level, when the error says the level is unsupported
//     (PickFallbackThinkingLevel);
//  5. a transient failure (overloaded, server, network, timeout, a rate
//     limit with no profile left) with retries left and a Retry-After
//     within MaxWait: StepRetry on the same model;
//  6. model failover when a fallback is configured;
//  7. otherwise the error surfaces.
func Next(f Failure, s State) Plan {
	if s.MaxRotations <= 0 {
		s.MaxRotations = DefaultMaxRotations
	}
	if s.MaxWait <= 0 {
		s.MaxWait = MaxRetryAfterWait
	}
	r := f.Reason
	if f.ExternalAbort {
		return Plan{Step: StepSurface, Reason: r, Message: "the run was aborted"}
	}
	if r == llm.ReasonContextOverflow {
		return Plan{Step: StepNone, Reason: r, Message: "a context overflow is recovered by compaction, never by failover"}
	}
	if r == "" {
		r = llm.ReasonUnknown
	}
	mark := marks(r)
	if (r == llm.ReasonAuth || r == llm.ReasonAuthPermanent) && s.CanRefreshAuth && !s.AuthRefreshed {
		return Plan{Step: StepRefreshAuth, Reason: r, Message: "the credential was rejected: refreshing it once and retrying"}
	}
	transient := r.Transient()
	waitTooLong := f.RetryAfter > s.MaxWait
	notWorthWaiting := waitTooLong || s.RetriesExhausted

	// Rotation escalates to the next model when the same limit keeps
	// coming back on every credential.
	if s.FallbackConfigured {
		if r == llm.ReasonRateLimit && s.RateLimitRotations >= s.MaxRotations {
			return Plan{Step: StepFallbackModel, Reason: r, Mark: mark, Message: RateLimitedMessage}
		}
		if r == llm.ReasonOverloaded && notWorthWaiting && s.OverloadRotations >= s.MaxRotations {
			return Plan{Step: StepFallbackModel, Reason: r, Mark: mark, Message: OverloadedMessage}
		}
	}
	if s.ProfilesLeft > 0 && (credentialReason(r) || transient && notWorthWaiting) {
		msg := fmt.Sprintf("%s: trying the next auth profile", Words(r))
		if waitTooLong {
			msg = fmt.Sprintf("%s and the provider asks to wait %s (over %s): trying the next auth profile", Words(r), f.RetryAfter.Round(time.Second), s.MaxWait)
		}
		return Plan{Step: StepRotateProfile, Reason: r, Mark: mark, Message: msg}
	}
	if l, ok := PickFallbackThinkingLevel(f.Message, s.AttemptedThinking); ok {
		return Plan{Step: StepLowerThinking, Reason: r, Thinking: l,
			Message: fmt.Sprintf("the model does not accept this thinking level: retrying with %s", l)}
	}
	if transient && !notWorthWaiting {
		return Plan{Step: StepRetry, Reason: r, Mark: mark, Message: Words(r) + ": retrying the same model"}
	}
	if s.FallbackConfigured {
		return Plan{Step: StepFallbackModel, Reason: r, Mark: mark, Message: Words(r) + ": moving on to the next model"}
	}
	return Plan{Step: StepSurface, Reason: r, Mark: mark, Message: r.UserMessage()}
}

// Words names a failure reason in a few words, to start a line that says
// what the run does about it ("rate limited: retrying in 2s").
func Words(r llm.Reason) string {
	switch r {
	case llm.ReasonAuth:
		return "the API key was rejected"
	case llm.ReasonAuthPermanent:
		return "the API key or account is disabled"
	case llm.ReasonBilling:
		return "the account has a billing problem"
	case llm.ReasonRateLimit:
		return "rate limited"
	case llm.ReasonOverloaded:
		return "the model is overloaded"
	case llm.ReasonModelNotFound:
		return "the model is not available with this key"
	case llm.ReasonTimeout:
		return "the model call timed out"
	case llm.ReasonServer:
		return "the provider had a server error"
	case llm.ReasonNetwork:
		return "the connection failed"
	case llm.ReasonFormat:
		return "the provider rejected the request"
	}
	return "the model call failed"
}
