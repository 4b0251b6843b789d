package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// maxErrorBody caps how much of an error response is read, maxJSONBody a
// whole reply sent without streaming.
const (
	maxErrorBody = 64 << 10
	maxJSONBody  = 32 << 20
)

// errIdle is the cause of a stream given up for silence.
type errIdle struct{ d time.Duration }

func (e errIdle) Error() string {
	return fmt.Sprintf("no stream event from the provider for %s", e.d)
}

// Is makes an idle stop count as a deadline, so llm.NetworkError classifies
// it as a timeout.
func (e errIdle) Is(target error) bool { return target == context.DeadlineExceeded }

// Exchange is one HTTP request with its idle timer. The timer runs from
// the moment the request is sent; Touch resets it for each real event.
// When it fires, it cancels the request, which closes the body at once.
// Close must be called when the stream is over.
type Exchange struct {
	provider, model string
	parent          context.Context
	ctx             context.Context
	cancel          context.CancelCauseFunc
	timer           *time.Timer
	idle            time.Duration
	resp            *http.Response

	// Body is the stream to decode after a successful Do: the response
	// body, or a reader over the bytes sniffed from it.
	Body io.Reader
	// AcceptJSON takes a 200 application/json answer (a server that
	// ignored "stream": true) into JSONBody instead of failing.
	AcceptJSON bool
	JSONBody   []byte
}

// NewExchange starts the idle timer of a call to provider's model under
// ctx; idle must be positive.
func NewExchange(ctx context.Context, provider, model string, idle time.Duration) *Exchange {
	x := &Exchange{provider: provider, model: model, parent: ctx, idle: idle}
	x.ctx, x.cancel = context.WithCancelCause(ctx)
	x.timer = time.AfterFunc(idle, func() { x.cancel(errIdle{idle}) })
	return x
}

// drainLimit and drainTime bound how much of a finished stream's tail is
// read so that its connection can be reused.
const (
	drainLimit = 16 << 10
	drainTime  = 100 * time.Millisecond
)

// Close stops the timer and releases the body. After a complete reply the
// rest of the body (normally just its end) is read first, briefly, so the
// connection goes back to the pool instead of being torn down.
func (x *Exchange) Close(complete bool) {
	if x.resp != nil {
		if complete && x.timer.Stop() {
			x.timer.Reset(drainTime)
			io.CopyN(io.Discard, x.resp.Body, drainLimit)
		}
		x.timer.Stop()
		x.resp.Body.Close()
	} else {
		x.timer.Stop()
	}
	x.cancel(context.Canceled)
}

// Touch restarts the idle timer: call it for each real event.
func (x *Exchange) Touch() { x.timer.Reset(x.idle) }

// Context is the context of the request: done when the caller cancelled,
// the idle timer fired or the exchange was closed.
func (x *Exchange) Context() context.Context { return x.ctx }

// Do sends the request and checks the response: a non-2xx status, or a
// body that is not an event stream, becomes a classified error.
func (x *Exchange) Do(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req.WithContext(x.ctx))
	if err != nil {
		return x.Failure(err)
	}
	x.resp = resp
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil && len(body) == 0 {
			return x.Failure(rerr)
		}
		return llm.NewHTTPError(x.provider, x.model, resp.StatusCode, resp.Header, body)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if x.AcceptJSON && mt == "application/json" {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody))
		if err != nil {
			return x.Failure(err)
		}
		x.JSONBody = body
		return nil
	}
	x.Body = resp.Body
	if ct != "" && mt != "text/event-stream" {
		// Some proxies label a stream text/plain or octet-stream: look at
		// the first bytes before calling it wrong.
		br := bufio.NewReader(resp.Body)
		head, _ := br.Peek(16)
		if looksLikeSSE(head) {
			x.Body = br
			x.Touch()
			return nil
		}
		body, _ := io.ReadAll(io.LimitReader(br, maxErrorBody))
		e := llm.NewHTTPError(x.provider, x.model, resp.StatusCode, resp.Header, body)
		e.Message = fmt.Sprintf("expected an event stream but the server sent %s: %s", ct, e.Message)
		if e.Reason == llm.ReasonUnknown {
			e.Reason = llm.ReasonServer
		}
		return e
	}
	x.Touch()
	return nil
}

// looksLikeSSE reports whether a body starts like an event stream.
func looksLikeSSE(head []byte) bool {
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	for _, p := range []string{"data:", "event:", "id:", "retry:", ":"} {
		if bytes.HasPrefix(head, []byte(p)) {
			return true
		}
	}
	return false
}

// Failure turns a transport error into the error the stream reports: the
// caller's cancellation as it is, an idle stop as a timeout, anything else
// as a network failure.
func (x *Exchange) Failure(err error) error {
	if x.parent.Err() != nil {
		return AbortError(x.parent)
	}
	var idle errIdle
	if cause := context.Cause(x.ctx); errors.As(cause, &idle) {
		return llm.NetworkError(x.provider, x.model, idle)
	}
	return llm.NetworkError(x.provider, x.model, err)
}

// AbortError is the error of a call the caller cancelled: ctx.Err(), so
// errors.Is(err, context.Canceled) holds, with the cancellation cause
// attached when there is one.
func AbortError(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// Malformed reports stream content that could not be understood, quoting
// the start of it.
func Malformed(provider, model, what string, data []byte) *llm.ProviderError {
	const max = 512
	quoted := data
	if len(quoted) > max {
		quoted = quoted[:max]
	}
	e := llm.NewHTTPError(provider, model, 0, nil, data)
	e.Message = fmt.Sprintf("%s: %s", what, bytes.TrimSpace(quoted))
	if e.Reason == llm.ReasonUnknown {
		e.Reason = llm.ReasonServer
	}
	return e
}

// TooLarge reports a stream event over the reader's size limit: a
// format failure (not transient: the same request would get the same
// event), matching llm.ErrResponseTooLarge, that says what happened.
func TooLarge(provider, model string, err error) *llm.ProviderError {
	return &llm.ProviderError{Provider: provider, Model: model, Reason: llm.ReasonFormat,
		Message: "the provider sent one streaming event larger than agentloop accepts (" + err.Error() + "); the reply was stopped there",
		Err:     fmt.Errorf("%w: %w", llm.ErrResponseTooLarge, err)}
}

// Truncated reports a stream that ended before its terminator, as a
// network failure (a retry may well succeed).
func Truncated(provider, model string) *llm.ProviderError {
	return llm.NetworkError(provider, model, fmt.Errorf("the stream ended before the reply was complete: %w", io.ErrUnexpectedEOF))
}

// SetHeaders applies the default headers (skipping empty values), then
// the configured extras, which win.
func SetHeaders(h http.Header, defaults, extra map[string]string) {
	for k, v := range defaults {
		if v != "" {
			h.Set(k, v)
		}
	}
	for k, v := range extra {
		h.Set(k, v)
	}
}

// SanitizeID makes a tool-call id fit [A-Za-z0-9_-]{1,max}, as strict
// providers require of ids that another provider minted: other bytes
// become '_' and the id is cut at max bytes. A fitting id is returned as
// it is, and the same id always gives the same result, so a call and its
// result stay paired.
func SanitizeID(id string, max int) string {
	ok := len(id) > 0 && len(id) <= max
	for i := 0; ok && i < len(id); i++ {
		ok = idByte(id[i])
	}
	if ok {
		return id
	}
	var sb strings.Builder
	for i := 0; i < len(id) && sb.Len() < max; i++ {
		if c := id[i]; idByte(c) {
			sb.WriteByte(c)
		} else {
			sb.WriteByte('_')
		}
	}
	if sb.Len() == 0 {
		return "call"
	}
	return sb.String()
}

// NewCallID makes an id for a tool call the provider sent without one:
// prefix and 24 random hex digits. Ids must be unique across a transcript,
// not only within a message (results are matched to calls by id), so a
// counter per stream will not do.
func NewCallID(prefix string) string {
	const hex = "0123456789abcdef"
	var b [24]byte
	for i, r := 0, rand.Uint64(); i < len(b); i, r = i+1, r>>4 {
		if i == 16 {
			r = rand.Uint64()
		}
		b[i] = hex[r&15]
	}
	return prefix + string(b[:])
}

func idByte(c byte) bool {
	return c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// Unreadable is what a decoder returns for an event it could not decode.
// JSON that is not valid fails the stream (Malformed). Valid JSON in a
// shape the decoder cannot read (a field of another type, a structure of a
// newer API version) is skipped, nil: one odd event must not end a stream
// a client could finish. An odd event that reports an error still fails
// the stream with that error.
func Unreadable(provider, model string, data []byte) error {
	if !json.Valid(data) {
		return Malformed(provider, model, "the provider sent an event that is not valid JSON", data)
	}
	var head struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &head) == nil && (head.Type == "error" || len(head.Error) > 0 && string(head.Error) != "null") {
		return llm.NewStreamError(provider, model, string(data))
	}
	return nil
}
