package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The error codes of the API (docs/gateway.md).
const (
	CodeUnauthorized    = "unauthorized"
	CodeForbidden       = "forbidden"
	CodeNotFound        = "not_found"
	CodeInvalidRequest  = "invalid_request"
	CodeSessionBusy     = "session_busy"
	CodeRunNotActive    = "run_not_active"
	CodeAlreadyResolved = "already_resolved"
	CodeQueueFull       = "queue_full"
	CodeOverloaded      = "overloaded"
	CodeResyncRequired  = "resync_required"
	CodeTooLarge        = "too_large"
	// CodeRequestTimeout: the request's body did not arrive within
	// Config.BodyTimeout (408).
	CodeRequestTimeout = "request_timeout"
	CodeUnavailable    = "unavailable"
	// CodeIdempotencyKeyReused: a run start repeats an idempotency key
	// with another body (422).
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeInternal             = "internal"
)

// Error is the one error value of the API: REST writes it as
// {"error":{...}} with Status, JSON-RPC as its error object.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Retryable says the same request may succeed later; RetryAfter, when
	// set, says when (the Retry-After header, retryAfterMs).
	Retryable  bool           `json:"retryable"`
	RetryAfter time.Duration  `json:"-"`
	Details    map[string]any `json:"details,omitempty"`
	// Status is the HTTP status of the error.
	Status int `json:"-"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// errorf makes an *Error with the usual status of its code.
func errorf(code, format string, args ...any) *Error {
	e := &Error{Code: code, Message: fmt.Sprintf(format, args...)}
	switch code {
	case CodeUnauthorized:
		e.Status = http.StatusUnauthorized
	case CodeForbidden:
		e.Status = http.StatusForbidden
	case CodeNotFound:
		e.Status = http.StatusNotFound
	case CodeInvalidRequest:
		e.Status = http.StatusBadRequest
	case CodeSessionBusy, CodeRunNotActive, CodeAlreadyResolved, CodeResyncRequired:
		e.Status = http.StatusConflict
	case CodeQueueFull:
		e.Status, e.Retryable = http.StatusTooManyRequests, true
	case CodeOverloaded, CodeUnavailable:
		e.Status, e.Retryable = http.StatusServiceUnavailable, true
	case CodeTooLarge:
		e.Status = http.StatusRequestEntityTooLarge
	case CodeRequestTimeout:
		e.Status, e.Retryable = http.StatusRequestTimeout, true
	case CodeIdempotencyKeyReused:
		e.Status = http.StatusUnprocessableEntity
	default:
		e.Status = http.StatusInternalServerError
	}
	return e
}

// wireError is the body of an error response.
type wireError struct {
	Error struct {
		Code         string         `json:"code"`
		Message      string         `json:"message"`
		Retryable    bool           `json:"retryable"`
		RetryAfterMs int64          `json:"retryAfterMs,omitempty"`
		Details      map[string]any `json:"details,omitempty"`
	} `json:"error"`
}

// writeError writes e as a REST error response.
func writeError(w http.ResponseWriter, e *Error) {
	var body wireError
	body.Error.Code, body.Error.Message, body.Error.Retryable, body.Error.Details = e.Code, e.Message, e.Retryable, e.Details
	if e.RetryAfter > 0 {
		body.Error.RetryAfterMs = e.RetryAfter.Milliseconds()
		secs := int64((e.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, body)
}
