package anthropic

// This file holds the plumbing every wire package needs: the HTTP exchange
// with its idle timer, and the builder that turns decoded stream pieces into
// llm.Events. llm/openai carries the same file; keep them in step.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
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

// exchange is one HTTP request with its idle timer. The timer runs from
// the moment the request is sent; reset it for each real event. When it
// fires, it cancels the request, which closes the body at once.
type exchange struct {
	provider, model string
	parent          context.Context
	ctx             context.Context
	cancel          context.CancelCauseFunc
	timer           *time.Timer
	idle            time.Duration
	resp            *http.Response
	// body is the stream to decode: the response body, or a reader over
	// the bytes sniffed from it.
	body io.Reader
	// acceptJSON takes a 200 application/json answer (a server that
	// ignored "stream": true) into jsonBody instead of failing.
	acceptJSON bool
	jsonBody   []byte
}

func newExchange(ctx context.Context, provider, model string, idle time.Duration) *exchange {
	x := &exchange{provider: provider, model: model, parent: ctx, idle: idle}
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

// close stops the timer and releases the body. After a complete reply the
// rest of the body (normally just its end) is read first, briefly, so the
// connection goes back to the pool instead of being torn down.
func (x *exchange) close(complete bool) {
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

func (x *exchange) touch() { x.timer.Reset(x.idle) }

// do sends the request and checks the response: a non-2xx status, or a
// body that is not an event stream, becomes a classified error.
func (x *exchange) do(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req.WithContext(x.ctx))
	if err != nil {
		return x.failure(err)
	}
	x.resp = resp
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil && len(body) == 0 {
			return x.failure(rerr)
		}
		return llm.NewHTTPError(x.provider, x.model, resp.StatusCode, resp.Header, body)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if x.acceptJSON && mt == "application/json" {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody))
		if err != nil {
			return x.failure(err)
		}
		x.jsonBody = body
		return nil
	}
	x.body = resp.Body
	if ct != "" && mt != "text/event-stream" {
		// Some proxies label a stream text/plain or octet-stream: look at
		// the first bytes before calling it wrong.
		br := bufio.NewReader(resp.Body)
		head, _ := br.Peek(16)
		if looksLikeSSE(head) {
			x.body = br
			x.touch()
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
	x.touch()
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

// failure turns a transport error into the error the stream reports: the
// caller's cancellation as it is, an idle stop as a timeout, anything else
// as a network failure.
func (x *exchange) failure(err error) error {
	if x.parent.Err() != nil {
		return abortError(x.parent)
	}
	var idle errIdle
	if cause := context.Cause(x.ctx); errors.As(cause, &idle) {
		return llm.NetworkError(x.provider, x.model, idle)
	}
	return llm.NetworkError(x.provider, x.model, err)
}

// abortError is the error of a call the caller cancelled: ctx.Err(), so
// errors.Is(err, context.Canceled) holds, with the cancellation cause
// attached when there is one.
func abortError(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// malformed reports stream content that could not be understood, quoting
// it.
func malformed(provider, model, what string, data []byte) *llm.ProviderError {
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

// truncatedStream reports a stream that ended before its terminator.
func truncatedStream(provider, model string) *llm.ProviderError {
	return llm.NetworkError(provider, model, fmt.Errorf("the stream ended before the reply was complete: %w", io.ErrUnexpectedEOF))
}

// jsonReader decodes one JSON document per call, reusing one json.Decoder
// so the scanner's and decoder's buffers are not reallocated per event.
type jsonReader struct {
	r   bytes.Reader
	dec *json.Decoder
}

func (j *jsonReader) decode(data []byte, v any) error {
	data = bytes.TrimRight(data, " \t\r\n")
	if j.dec == nil {
		j.dec = json.NewDecoder(&j.r)
	}
	j.r.Reset(data)
	start := j.dec.InputOffset()
	err := j.dec.Decode(v)
	if err == nil && (j.r.Len() > 0 || j.dec.InputOffset()-start != int64(len(data))) {
		err = errors.New("unexpected data after the JSON value")
	}
	if err != nil {
		j.dec = nil // a failed decoder keeps its error: start afresh
	}
	return err
}

// argsSnapshotFree is the size up to which tool arguments are re-parsed
// after every fragment; beyond it, after every 1/8 growth, so long
// arguments cost linear time overall.
const argsSnapshotFree = 4 << 10

// builder accumulates the assistant message and yields its events.
type builder struct {
	msg      llm.Message
	yield    func(llm.Event, error) bool
	stopped  bool // the consumer broke out of the loop
	started  bool
	finished bool                     // the done event was emitted
	open     []bool                   // per content index: block not ended yet
	args     map[int]*args            // per tool-call content index
	texts    map[int]*strings.Builder // per text or thinking content index
	prices   llm.Prices
}

type args struct {
	raw    []byte
	parsed int // len(raw) at the last tolerant parse
}

func newBuilder(info llm.ModelInfo, provider string, api llm.API, yield func(llm.Event, error) bool) *builder {
	return &builder{
		msg: llm.Message{
			Role:      llm.RoleAssistant,
			Content:   []llm.Content{},
			Provider:  provider,
			Model:     info.ID,
			API:       string(api),
			Usage:     &llm.Usage{},
			Timestamp: llm.NowMillis(),
		},
		yield:  yield,
		args:   map[int]*args{},
		texts:  map[int]*strings.Builder{},
		prices: info.Cost,
	}
}

func (b *builder) emit(e llm.Event) bool {
	if b.stopped {
		return false
	}
	e.Partial = &b.msg
	if !b.yield(e, nil) {
		b.stopped = true
	}
	return !b.stopped
}

func (b *builder) start() bool {
	b.started = true
	return b.emit(llm.Event{Type: llm.EventStart})
}

// begin appends a block and emits its _start event; it returns the block's
// content index.
func (b *builder) begin(c llm.Content) (int, bool) {
	i := len(b.msg.Content)
	b.msg.Content = append(b.msg.Content, c)
	b.open = append(b.open, true)
	var t llm.EventType
	switch c.Type {
	case llm.ContentThinking:
		t = llm.EventThinkingStart
	case llm.ContentToolCall:
		t = llm.EventToolCallStart
		b.args[i] = &args{}
	default:
		t = llm.EventTextStart
	}
	return i, b.emit(llm.Event{Type: t, ContentIndex: i})
}

// appendTo grows the text of block i in amortised linear time: the block's
// string shares the builder's buffer, which only ever grows.
func (b *builder) appendTo(i int, cur, s string) string {
	sb := b.texts[i]
	if sb == nil {
		sb = &strings.Builder{}
		sb.WriteString(cur)
		b.texts[i] = sb
	}
	sb.WriteString(s)
	return sb.String()
}

func (b *builder) text(i int, s string) bool {
	b.msg.Content[i].Text = b.appendTo(i, b.msg.Content[i].Text, s)
	return b.emit(llm.Event{Type: llm.EventTextDelta, ContentIndex: i, Delta: s})
}

func (b *builder) thinking(i int, s string) bool {
	b.msg.Content[i].Thinking = b.appendTo(i, b.msg.Content[i].Thinking, s)
	return b.emit(llm.Event{Type: llm.EventThinkingDelta, ContentIndex: i, Delta: s})
}

// toolArgs appends a fragment of a call's argument JSON and refreshes the
// tolerant parse.
func (b *builder) toolArgs(i int, frag string) bool {
	a := b.args[i]
	if a == nil {
		return true
	}
	a.raw = append(a.raw, frag...)
	if n := len(a.raw); n <= argsSnapshotFree || n-a.parsed >= n/8 {
		b.msg.Content[i].Arguments = jsonpartial.Parse(a.raw)
		a.parsed = n
	}
	return b.emit(llm.Event{Type: llm.EventToolCallDelta, ContentIndex: i, Delta: frag})
}

// finishArgs makes a call's final arguments: a strict parse, or the
// Invalid marker when the text is not one JSON object.
func (b *builder) finishArgs(i int) {
	a := b.args[i]
	if a == nil {
		return
	}
	delete(b.args, i)
	if final, err := jsonpartial.Strict(a.raw); err == nil {
		b.msg.Content[i].Arguments = final
	} else {
		b.msg.Content[i].Arguments = jsonpartial.Invalid(a.raw)
	}
}

// endStrict ends tool-call block i if its arguments so far parse strictly
// as one JSON object, and reports whether it did.
func (b *builder) endStrict(i int) bool {
	a := b.args[i]
	if a == nil {
		return false
	}
	final, err := jsonpartial.Strict(a.raw)
	if err != nil {
		return false
	}
	delete(b.args, i)
	b.msg.Content[i].Arguments = final
	b.end(i)
	return true
}

// end closes block i and emits its _end event with the finished block.
func (b *builder) end(i int) bool {
	if i < 0 || i >= len(b.open) || !b.open[i] {
		return true
	}
	b.open[i] = false
	delete(b.texts, i)
	var t llm.EventType
	switch b.msg.Content[i].Type {
	case llm.ContentThinking:
		t = llm.EventThinkingEnd
	case llm.ContentToolCall:
		t = llm.EventToolCallEnd
		b.finishArgs(i)
	default:
		t = llm.EventTextEnd
	}
	block := b.msg.Content[i]
	return b.emit(llm.Event{Type: t, ContentIndex: i, Block: &block})
}

// endAll closes the blocks still open, in order.
func (b *builder) endAll() bool {
	for i := range b.open {
		if b.open[i] && !b.end(i) {
			return false
		}
	}
	return true
}

func (b *builder) finishUsage() {
	u := b.msg.Usage
	u.ComputeTotal()
	u.ApplyPrices(b.prices)
}

// done ends a successful stream.
func (b *builder) done(reason llm.StopReason) {
	if !b.endAll() {
		return
	}
	b.finishUsage()
	b.msg.StopReason = reason
	b.finished = true
	b.emit(llm.Event{Type: llm.EventDone, Reason: reason, Message: &b.msg})
}

// fail ends the stream with err: before the start event as a bare error,
// after it as an error event carrying the partial message, whose open tool
// calls get their final (possibly Invalid) arguments.
func (b *builder) fail(err error) {
	if b.stopped {
		return
	}
	if !b.started {
		b.stopped = true
		b.yield(llm.Event{}, err)
		return
	}
	for i := range b.open {
		if b.open[i] {
			b.open[i] = false
			b.finishArgs(i)
		}
	}
	b.finishUsage()
	reason := llm.StopReasonError
	if !isProviderError(err) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		reason = llm.StopReasonAborted
	}
	b.msg.StopReason = reason
	b.msg.ErrorMessage = err.Error()
	b.emit(llm.Event{Type: llm.EventError, Reason: reason, Message: &b.msg, Err: err})
}

func isProviderError(err error) bool {
	var pe *llm.ProviderError
	return errors.As(err, &pe)
}

// setHeaders applies the default headers, then the configured extras.
func setHeaders(h http.Header, defaults, extra map[string]string) {
	for k, v := range defaults {
		if v != "" {
			h.Set(k, v)
		}
	}
	for k, v := range extra {
		h.Set(k, v)
	}
}

// safeIDChars reports whether id fits [A-Za-z0-9_-]{1,64}.
func sanitizeID(id string, max int) string {
	ok := len(id) > 0 && len(id) <= max
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	if ok {
		return id
	}
	var sb strings.Builder
	for i := 0; i < len(id) && sb.Len() < max; i++ {
		c := id[i]
		if c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
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
