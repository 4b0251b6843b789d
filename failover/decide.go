package failover

import "github.com/agentloop/agentloop/llm"

// Stage is where in an attempt a failure was seen.
type Stage string

// The stages of Decide.
const (
	// StagePrompt is a model call that failed before it produced a reply
	// (the request was refused, the connection failed).
	StagePrompt Stage = "prompt"
	// StageAssistant is a reply that ended in error, or an attempt that
	// timed out, after the model had started answering.
	StageAssistant Stage = "assistant"
	// StageRetryLimit is a run that reached its iteration cap.
	StageRetryLimit Stage = "retry_limit"
)

// Action is what Decide tells the runner to do.
type Action string

// The actions of Decide.
const (
	// ActionRotateProfile tries the next auth profile of the same model.
	ActionRotateProfile Action = "rotate_profile"
	// ActionFallbackModel ends this model's part of the run with a
	// *FailoverError, so the next model of the chain takes over.
	ActionFallbackModel Action = "fallback_model"
	// ActionSurfaceError ends the run with the error as it is.
	ActionSurfaceError Action = "surface_error"
	// ActionContinueNormal carries on: the failure is not a failover matter.
	ActionContinueNormal Action = "continue_normal"
	// ActionReturnErrorPayload ends a run at its iteration cap with the
	// retry-limit message.
	ActionReturnErrorPayload Action = "return_error_payload"
)

// ReasonSessionExpired is a failure reason some harnesses report (an
// external agent's session is gone); it is not an llm.Reason because no
// wire package produces it, but retry-limit decisions know it.
const ReasonSessionExpired llm.Reason = "session_expired"

// Input is what Decide reads. Reason "" stands for "not classified".
type Input struct {
	Stage Stage
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

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Reason is the failure reason the action is taken for ("" when none).
	Reason llm.Reason
}

// Decide is the per-stage failover table (reference §4.1):
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
func Decide(in Input) Decision {
	r := in.Reason
	switch in.Stage {
	case StageRetryLimit:
		switch r {
		case "", llm.ReasonTimeout, llm.ReasonModelNotFound, llm.ReasonFormat, ReasonSessionExpired:
			return Decision{Action: ActionReturnErrorPayload}
		}
		if in.FallbackConfigured {
			return Decision{Action: ActionFallbackModel, Reason: r}
		}
		return Decision{Action: ActionReturnErrorPayload}
	case StagePrompt:
		if in.ExternalAbort {
			return Decision{Action: ActionSurfaceError, Reason: r}
		}
		if !in.ProfileRotated && in.FailoverFailure && r != llm.ReasonTimeout {
			return Decision{Action: ActionRotateProfile, Reason: r}
		}
		if in.FallbackConfigured && in.FailoverFailure {
			return Decision{Action: ActionFallbackModel, Reason: orUnknown(r)}
		}
		return Decision{Action: ActionSurfaceError, Reason: r}
	default: // StageAssistant
		if in.ExternalAbort {
			return Decision{Action: ActionSurfaceError, Reason: r}
		}
		shouldRotate := (!in.Aborted && (in.FailoverFailure || r != "")) || (in.TimedOut && !in.TimedOutDuringCompaction)
		switch {
		case !shouldRotate:
			return Decision{Action: ActionContinueNormal, Reason: r}
		case !in.ProfileRotated:
			return Decision{Action: ActionRotateProfile, Reason: r}
		case in.FallbackConfigured:
			if in.TimedOut {
				return Decision{Action: ActionFallbackModel, Reason: llm.ReasonTimeout}
			}
			return Decision{Action: ActionFallbackModel, Reason: orUnknown(r)}
		}
		return Decision{Action: ActionSurfaceError, Reason: r}
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
