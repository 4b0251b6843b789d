package llm

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file is the seam between the wire packages and the classifier. The
// wire packages call NewHTTPError for a non-2xx response or an error event
// in a stream, and NetworkError for a failed transport. The rules live in
// classify_rules.go, the body parsing in classify_body.go.

// Limits on what a *ProviderError keeps of a response.
const (
	maxBodyKept    = 4 << 10
	maxMessageKept = 1 << 10
)

// NewHTTPError classifies a failed HTTP response (or an error reported in a
// stream, with status 0) into a *ProviderError. body is the raw response
// body; its message is extracted from the usual JSON error shapes (OpenAI,
// Anthropic, Gemini, Bedrock, Ollama, plain text; an HTML page is reported
// as such). Credentials that the provider echoes back are redacted from
// Message and Body.
func NewHTTPError(provider, model string, status int, header http.Header, body []byte) *ProviderError {
	eb := parseErrorBody(body)
	if eb.typ == "" && header != nil {
		// Bedrock names the error kind in a header, not in the body.
		if t := header.Get("X-Amzn-Errortype"); t != "" {
			eb.typ, _, _ = strings.Cut(t, ":")
		}
	}
	if status == 0 && eb.status != 0 {
		status = eb.status
	}
	msg := eb.display()
	if msg == "" && status != 0 {
		msg = strconv.Itoa(status) + " " + http.StatusText(status) + " (no body)"
	}
	e := &ProviderError{
		Provider: provider,
		Model:    model,
		Status:   status,
		// Redact before cutting: a key cut in two is no longer recognised.
		Message: truncate(redact(msg), maxMessageKept),
		Body:    truncate(redact(strings.TrimSpace(string(body[:min(len(body), 2*maxBodyKept)]))), maxBodyKept),
	}
	e.Reason = classifyParsed(provider, status, eb)
	e.RetryAfter = ParseRetryAfter(header, time.Now())
	if e.RetryAfter == 0 {
		e.RetryAfter = eb.retryDelay
	}
	if e.RetryAfter == 0 && (e.Reason == ReasonRateLimit || e.Reason == ReasonOverloaded) {
		e.RetryAfter = retryHintFromText(eb.message)
	}
	return e
}

// NewStreamError classifies an error a provider reported inside a stream
// (an SSE error event, an error chunk): text is the event's data, JSON or
// plain. It is NewHTTPError with no status and no headers.
func NewStreamError(provider, model, text string) *ProviderError {
	return NewHTTPError(provider, model, 0, nil, []byte(text))
}

// NetworkError classifies a transport failure: a cancelled context stays
// recognisable with errors.Is, a deadline or a timed-out connection becomes
// a timeout, anything else is a network failure.
func NetworkError(provider, model string, err error) *ProviderError {
	e := &ProviderError{Provider: provider, Model: model, Err: err, Reason: ReasonNetwork, Message: truncate(redact(err.Error()), maxMessageKept)}
	if isTimeoutErr(err) {
		e.Reason = ReasonTimeout
	}
	return e
}

// Classify maps a status code and an error text (a response body, an error
// event, or a message) to a Reason. The text is read first, the status
// then decides; see ClassifyFor.
func Classify(status int, message string) Reason {
	return ClassifyFor("", status, message)
}

// ClassifyFor is Classify for a named provider: a few texts mean different
// things at different providers (OpenRouter's "Key limit exceeded" is a
// billing limit, its "Provider returned error" an upstream failure).
//
// The text may be a JSON error body, a plain message, or a message that
// starts with a status ("429 Too Many Requests: ...", "HTTP 404: ...");
// with status 0 such a leading status is used. The result is never "": a
// failure nothing recognises is ReasonUnknown.
func ClassifyFor(provider string, status int, message string) Reason {
	eb := parseErrorBody([]byte(message))
	if status == 0 {
		status = eb.status
	}
	return classifyParsed(provider, status, eb)
}

// ClassifyText classifies an error text alone, as a stream error event or a
// stored error message carries it. It is ClassifyFor with no provider and
// no status.
func ClassifyText(message string) Reason {
	return ClassifyFor("", 0, message)
}

// ClassifyError returns the reason of any error: the Reason of the first
// *ProviderError in its chain; timeout for deadlines and timed-out network
// operations; network for other transport failures; otherwise what its text
// says. It returns "" for nil and for a cancelled context, which is the
// caller's own abort, not a provider failure.
func ClassifyError(err error) Reason {
	if err == nil {
		return ""
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	if errors.Is(err, context.Canceled) {
		return ""
	}
	if isTimeoutErr(err) {
		return ReasonTimeout
	}
	if isNetworkErr(err) {
		return ReasonNetwork
	}
	return ClassifyText(err.Error())
}

func isTimeoutErr(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isNetworkErr(err error) bool {
	var (
		op  *net.OpError
		dns *net.DNSError
		no  syscall.Errno
	)
	return errors.As(err, &op) || errors.As(err, &dns) || errors.As(err, &no) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
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

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
