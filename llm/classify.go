package llm

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file is the seam between the wire packages and the classifier. The
// wire packages call NewHTTPError for a non-2xx response or an error event
// in a stream, and NetworkError for a failed transport.

// NewHTTPError classifies a failed HTTP response (or an error reported in a
// stream, with status 0) into a *ProviderError. body is the raw response
// body; its message is extracted from the usual JSON error shapes.
func NewHTTPError(provider, model string, status int, header http.Header, body []byte) *ProviderError {
	msg := strings.TrimSpace(string(body))
	e := &ProviderError{Provider: provider, Model: model, Status: status, Message: msg, Body: msg}
	e.Reason = Classify(status, msg)
	e.RetryAfter = ParseRetryAfter(header, time.Now())
	return e
}

// NetworkError classifies a transport failure: a cancelled context stays
// recognisable with errors.Is, a deadline becomes a timeout, anything else
// is a network failure.
func NetworkError(provider, model string, err error) *ProviderError {
	e := &ProviderError{Provider: provider, Model: model, Err: err, Reason: ReasonNetwork, Message: err.Error()}
	if errors.Is(err, context.DeadlineExceeded) {
		e.Reason = ReasonTimeout
	}
	return e
}

// Classify maps a status code and an error text to a Reason.
func Classify(status int, message string) Reason {
	switch {
	case status == 401 || status == 403:
		return ReasonAuth
	case status == 402:
		return ReasonBilling
	case status == 429:
		return ReasonRateLimit
	case status == 529 || status == 503:
		return ReasonOverloaded
	case status == 404:
		return ReasonModelNotFound
	case status == 408 || status == 504:
		return ReasonTimeout
	case status >= 500:
		return ReasonServer
	case status == 400 || status == 413 || status == 422:
		return ReasonFormat
	}
	return ReasonUnknown
}

// ParseRetryAfter reads retry-after-ms and Retry-After (seconds or an HTTP
// date) from a response header; 0 when absent or unparsable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil && t.After(now) {
			return t.Sub(now)
		}
	}
	return 0
}
