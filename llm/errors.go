package llm

import (
	"errors"
	"fmt"
	"time"
)

// Reason classifies a provider failure. Decisions (retry, rotate, compact,
// fail over) are made on the reason, never on error text.
type Reason string

// The failure reasons.
const (
	ReasonAuth            Reason = "auth"
	ReasonAuthPermanent   Reason = "auth_permanent"
	ReasonBilling         Reason = "billing"
	ReasonRateLimit       Reason = "rate_limit"
	ReasonOverloaded      Reason = "overloaded"
	ReasonTimeout         Reason = "timeout"
	ReasonContextOverflow Reason = "context_overflow"
	ReasonFormat          Reason = "format"
	ReasonModelNotFound   Reason = "model_not_found"
	ReasonServer          Reason = "server"
	ReasonNetwork         Reason = "network"
	ReasonUnknown         Reason = "unknown"
)

// ErrResponseTooLarge is matched (errors.Is) by the error of a reply
// that holds more than agentloop accepts in one piece (an event of a
// stream over its size limit). The same request would get the same
// reply, so it is not retried.
var ErrResponseTooLarge = errors.New("the provider's response is larger than agentloop accepts")

// ProviderError is a classified failure of a model call.
type ProviderError struct {
	Provider string
	Model    string
	// Status is the HTTP status, 0 when there was no response.
	Status int
	Reason Reason
	// RetryAfter is the wait the provider asked for, 0 if it did not.
	RetryAfter time.Duration
	// Message is the provider's own words, as short as they come.
	Message string
	// Body is the response body (truncated), for diagnostics.
	Body string
	// Err is the underlying error, if any (a network error, a decode error).
	Err error
}

func (e *ProviderError) Error() string {
	where := e.Provider
	if e.Model != "" {
		where += "/" + e.Model
	}
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d): %s", where, e.Reason, e.Status, msg)
	}
	return fmt.Sprintf("%s: %s: %s", where, e.Reason, msg)
}

// Unwrap returns the underlying error.
func (e *ProviderError) Unwrap() error { return e.Err }

// ReasonOf returns the reason of the first *ProviderError in err's chain, or
// "" when there is none.
func ReasonOf(err error) Reason {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ""
}
