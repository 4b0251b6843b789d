package failover

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentloop/agentloop/llm"
)

// FailoverError moves a run from one model to the next of its fallback
// chain. The runner returns it from the failed model's part of the run;
// whoever walks the chain reads From and Reason, fills To when it starts
// the next candidate, and records the switch.
type FailoverError struct {
	// From and To are model references ("provider/id"); To is "" until a
	// next model is chosen.
	From, To string
	Reason   llm.Reason
	// Status is the HTTP status that stands for the failure: the
	// provider's, or Status(Reason).
	Status int
	// Message is for people: what went wrong with From.
	Message string
	// Err is the failure that caused the switch.
	Err error
}

// Error says which model failed and why.
func (e *FailoverError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.To != "" {
		return fmt.Sprintf("model %s failed (%s), switching to %s: %s", e.From, e.Reason, e.To, msg)
	}
	return fmt.Sprintf("model %s failed (%s): %s", e.From, e.Reason, msg)
}

// Unwrap returns the failure that caused the switch.
func (e *FailoverError) Unwrap() error { return e.Err }

// NewFailoverError wraps the failure of model from as a *FailoverError. An
// empty reason is read from err (llm.ClassifyError); the status is the
// provider's when err carries one, else Status(reason).
func NewFailoverError(from string, reason llm.Reason, err error) *FailoverError {
	if reason == "" {
		reason = orUnknown(llm.ClassifyError(err))
	}
	fe := &FailoverError{From: from, Reason: reason, Err: err}
	var pe *llm.ProviderError
	if errors.As(err, &pe) && pe.Status != 0 {
		fe.Status = pe.Status
	} else {
		fe.Status = Status(reason)
	}
	if err != nil {
		fe.Message = llm.ErrorText(err)
	} else {
		fe.Message = reason.UserMessage()
	}
	return fe
}

// Status is the HTTP status that stands for a failure reason when the
// provider gave none (resolveFailoverStatus): 0 for reasons without one.
func Status(r llm.Reason) int {
	switch r {
	case llm.ReasonBilling:
		return http.StatusPaymentRequired
	case llm.ReasonRateLimit:
		return http.StatusTooManyRequests
	case llm.ReasonAuth:
		return http.StatusUnauthorized
	case llm.ReasonAuthPermanent:
		return http.StatusForbidden
	case llm.ReasonTimeout:
		return http.StatusRequestTimeout
	case llm.ReasonFormat:
		return http.StatusBadRequest
	case llm.ReasonModelNotFound:
		return http.StatusNotFound
	case ReasonSessionExpired:
		return http.StatusGone
	case llm.ReasonOverloaded:
		return http.StatusServiceUnavailable
	}
	return 0
}

// Messages a run ends with when a rate limit or an overload keeps coming
// back after rotating, and a fallback model takes over.
const (
	RateLimitedMessage = "The provider keeps rate limiting every credential tried; moving on to the next model."
	OverloadedMessage  = "The provider stays overloaded for every credential tried; moving on to the next model."
)
