package compact

import (
	"context"
	"errors"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// Failure labels of a compaction, for metrics and logs.
const (
	FailureNothingToCompact = "nothing_to_compact"
	FailureAborted          = "aborted"
	FailureTimeout          = "timeout"
	FailureContextOverflow  = "context_overflow"
	FailureRateLimit        = "rate_limit"
	FailureAuth             = "auth"
	FailureProvider4xx      = "provider_error_4xx"
	FailureProvider5xx      = "provider_error_5xx"
	FailureSummary          = "summary_failed"
	FailureUnknown          = "unknown"
)

// ErrNothingToCompact is returned when the history holds nothing older
// than what must be kept verbatim.
var ErrNothingToCompact = errors.New("nothing to compact: the history is all recent messages")

// ClassifyFailure labels why a compaction failed. A *llm.ProviderError is
// labelled by its Reason and status; cancellation and deadlines by their
// kind; other errors by a few words of their text.
func ClassifyFailure(err error) string {
	if err == nil {
		return ""
	}
	switch {
	case errors.Is(err, ErrNothingToCompact):
		return FailureNothingToCompact
	case errors.Is(err, context.Canceled):
		return FailureAborted
	case errors.Is(err, context.DeadlineExceeded):
		return FailureTimeout
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		switch pe.Reason {
		case llm.ReasonTimeout:
			return FailureTimeout
		case llm.ReasonContextOverflow:
			return FailureContextOverflow
		case llm.ReasonRateLimit:
			return FailureRateLimit
		case llm.ReasonAuth, llm.ReasonAuthPermanent, llm.ReasonBilling:
			return FailureAuth
		}
		switch {
		case pe.Status >= 500:
			return FailureProvider5xx
		case pe.Status >= 400:
			return FailureProvider4xx
		case pe.Reason == llm.ReasonOverloaded || pe.Reason == llm.ReasonServer:
			return FailureProvider5xx
		}
		return FailureSummary
	}
	s := strings.ToLower(err.Error())
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(s, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("nothing to compact", "no real conversation"):
		return FailureNothingToCompact
	case has("abort", "cancel"):
		return FailureAborted
	case has("timeout", "timed out", "deadline"):
		return FailureTimeout
	case has("context overflow", "context length", "too long", "too large"):
		return FailureContextOverflow
	case has("rate limit", "429"):
		return FailureRateLimit
	case has(" 500", "500 ", "502", "503", "504", "529", "bad gateway", "overloaded", "internal server"):
		return FailureProvider5xx
	case has("400", "401", "403", "404", "422"):
		return FailureProvider4xx
	case has("summary", "summar"):
		return FailureSummary
	}
	return FailureUnknown
}
