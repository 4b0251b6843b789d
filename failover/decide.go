package failover

import "github.com/agentloop/agentloop/llm"

// stage is where in an attempt a failure was seen.
type stage string

// The stages of decide.
const (
	// stagePrompt is a model call that failed before it produced a reply
	// (the request was refused, the connection failed).
	stagePrompt stage = "prompt"
	// stageAssistant is a reply that ended in error, or an attempt that
	// timed out, after the model had started answering.
	stageAssistant stage = "assistant"
	// stageRetryLimit is a run that reached its iteration cap.
	stageRetryLimit stage = "retry_limit"
)

// action is what decide tells the runner to do.
type action string

// The actions of decide.
const (
	// actRotateProfile tries the next auth profile of the same model.
	actRotateProfile action = "rotate_profile"
	// actFallbackModel ends this model's part of the run with a
	// *FailoverError, so the next model of the chain takes over.
	actFallbackModel action = "fallback_model"
	// actSurfaceError ends the run with the error as it is.
	actSurfaceError action = "surface_error"
	// actContinueNormal carries on: the failure is not a failover matter.
	actContinueNormal action = "continue_normal"
	// actReturnErrorPayload ends a run at its iteration cap with the
	// retry-limit message.
	actReturnErrorPayload action = "return_error_payload"
)

// ReasonSessionExpired is a failure reason some harnesses report (an
// external agent's session is gone); it is not an llm.Reason because no
// wire package produces it, but retry-limit decisions know it.
const ReasonSessionExpired llm.Reason = "session_expired"

// input is what decide reads. Reason "" stands for "not classified".
type input struct {
	Stage stage
	// Aborted is set when the attempt was aborted; ExternalAbort when the
	// caller (not a timeout) aborted it.
	Aborted       bool
	ExternalAbort bool
	// FallbackConfigured says another model is left in the chain.
	FallbackConfigured bool
	// FailoverFailure says the error looks like one failover can help with
	// (a classified reason, or a text the classifier recognises).
	FailoverFailure bool
	Reason          llm.Reason
	// TimedOut is set when the attempt timed out; DuringCompaction when it
	// timed out while compacting (such runs are not retried).
	TimedOut                 bool
	TimedOutDuringCompaction bool
	// ProfileRotated is set when rotation was tried and no profile was left.
	ProfileRotated bool
}

// decision is decide's answer.
type decision struct {
	Action action
	// Reason is the failure reason the action is taken for ("" when none).
	Reason llm.Reason
}

// decide is OpenClaw's per-stage failover table (resolveRunFailoverDecision,
// reference §4.1). The runner does not take this path (Next is its one
// decision path); it is kept, unexported, because the reference vectors pin
// it (vectors_test.go), as the record of where Next departs from OpenClaw:
//
//   - retry limit: fall back when a fallback is configured and the reason
//     is one a different model can help with (not "", timeout,
//     model_not_found, format or session_expired); otherwise return the
//     retry-limit error;
//   - prompt: an external abort surfaces the error; a failover failure
//     other than a timeout rotates the profile until rotation is exhausted,
//     then falls back when configured; anything else surfaces;
//   - assistant: an external abort surfaces; a failure (or a timeout not
//     during compaction) rotates, then falls back (reason timeout when it
//     timed out); no failure carries on normally.
func decide(in input) decision {
	r := in.Reason
	switch in.Stage {
	case stageRetryLimit:
		switch r {
		case "", llm.ReasonTimeout, llm.ReasonModelNotFound, llm.ReasonFormat, ReasonSessionExpired:
			return decision{Action: actReturnErrorPayload}
		}
		if in.FallbackConfigured {
			return decision{Action: actFallbackModel, Reason: r}
		}
		return decision{Action: actReturnErrorPayload}
	case stagePrompt:
		if in.ExternalAbort {
			return decision{Action: actSurfaceError, Reason: r}
		}
		if !in.ProfileRotated && in.FailoverFailure && r != llm.ReasonTimeout {
			return decision{Action: actRotateProfile, Reason: r}
		}
		if in.FallbackConfigured && in.FailoverFailure {
			return decision{Action: actFallbackModel, Reason: orUnknown(r)}
		}
		return decision{Action: actSurfaceError, Reason: r}
	default: // stageAssistant
		if in.ExternalAbort {
			return decision{Action: actSurfaceError, Reason: r}
		}
		shouldRotate := (!in.Aborted && (in.FailoverFailure || r != "")) || (in.TimedOut && !in.TimedOutDuringCompaction)
		switch {
		case !shouldRotate:
			return decision{Action: actContinueNormal, Reason: r}
		case !in.ProfileRotated:
			return decision{Action: actRotateProfile, Reason: r}
		case in.FallbackConfigured:
			if in.TimedOut {
				return decision{Action: actFallbackModel, Reason: llm.ReasonTimeout}
			}
			return decision{Action: actFallbackModel, Reason: orUnknown(r)}
		}
		return decision{Action: actSurfaceError, Reason: r}
	}
}

func orUnknown(r llm.Reason) llm.Reason {
	if r == "" {
		return llm.ReasonUnknown
	}
	return r
}

// MergeRetryFailoverReason keeps the reason a run reports if it reaches its
// iteration cap: the current failure's reason, else timeout when the
// attempt timed out, else the previous reason.
func MergeRetryFailoverReason(previous, current llm.Reason, timedOut bool) llm.Reason {
	switch {
	case current != "":
		return current
	case timedOut:
		return llm.ReasonTimeout
	}
	return previous
}

// MaxIterations is the iteration cap of a run whose model has the given
// number of auth profiles: min(160, max(32, 24 + 8 × max(1, profiles))).
func MaxIterations(profiles int) int {
	return min(160, max(32, 24+8*max(1, profiles)))
}
