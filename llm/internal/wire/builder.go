package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
)

// JSONReader decodes one JSON document per call, reusing one json.Decoder
// so the scanner's and decoder's buffers are not reallocated per event.
// The zero value is ready to use.
type JSONReader struct {
	r   bytes.Reader
	dec *json.Decoder
}

// Decode decodes data, which must hold exactly one JSON value (trailing
// whitespace aside), into v.
func (j *JSONReader) Decode(data []byte, v any) error {
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

// Builder accumulates the assistant message and yields its events. Each
// method that emits reports whether the consumer still listens; once it
// has stopped, nothing more is emitted.
type Builder struct {
	// Msg is the message so far; every event's Partial points at it.
	// Decoders read it and may set fields of its blocks (a late name, a
	// signature) but add and close blocks only through the Builder.
	Msg      llm.Message
	yield    func(llm.Event, error) bool
	stopped  bool // the consumer broke out of the loop
	started  bool
	finished bool                     // the done event was emitted
	open     []bool                   // per content index: block not ended yet
	args     map[int]*args            // per tool-call content index
	texts    map[int]*strings.Builder // per text or thinking content index
	prices   llm.Prices
	// out counts the bytes of text, thinking and tool arguments so far;
	// past outCap the reply is cut (see LimitOutput).
	out, outCap int
	capped      bool
}

// Bounds on one reply, so a server that streams without end cannot fill
// memory and the transcript.
const (
	// OutputBytesPerToken turns the requested output limit into bytes:
	// about 4 bytes a token, twice over, for tokenizers that count
	// differently and thinking that a limit may not cover.
	OutputBytesPerToken = 8
	// MinOutputBytes is the least a reply may hold, whatever the limit.
	MinOutputBytes = 256 << 10
	// MaxOutputBytes is the most a reply may hold, whatever the limit.
	MaxOutputBytes = 4 << 20
)

// LimitOutput sets the output limit the request asked for, in tokens; 0
// leaves the model's (or MaxOutputBytes when neither is known). A reply
// that goes on past it (OutputBytesPerToken bytes a token, within
// MinOutputBytes and MaxOutputBytes) is cut there and ends as if the
// provider had stopped it at its limit (StopReasonLength).
func (b *Builder) LimitOutput(tokens int) {
	if tokens > 0 {
		b.outCap = outputCap(tokens)
	}
}

func outputCap(tokens int) int {
	if tokens <= 0 || tokens > MaxOutputBytes/OutputBytesPerToken {
		return MaxOutputBytes
	}
	return max(MinOutputBytes, tokens*OutputBytesPerToken)
}

// Capped reports whether the reply went past its output limit and was
// cut; its connection must not be reused (the server is still sending).
func (b *Builder) Capped() bool { return b.capped }

// grow counts n bytes of output and reports whether the reply is still
// within its limit.
func (b *Builder) grow(n int) bool {
	b.out += n
	if b.out > b.outCap {
		b.capped = true
		return false
	}
	return true
}

type args struct {
	raw    []byte
	parsed int // len(raw) at the last tolerant parse
}

// NewBuilder starts the message of a call to the model info describes,
// served by provider over api; its events go to yield.
func NewBuilder(info llm.ModelInfo, provider string, api llm.API, yield func(llm.Event, error) bool) *Builder {
	return &Builder{
		Msg: llm.Message{
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
		outCap: outputCap(info.MaxTokens),
	}
}

// Stopped reports whether the consumer broke out of the loop.
func (b *Builder) Stopped() bool { return b.stopped }

// Finished reports whether the done event was emitted: the reply is
// complete, and its connection may be reused.
func (b *Builder) Finished() bool { return b.finished }

// Open reports whether block i has begun and not ended.
func (b *Builder) Open(i int) bool { return i >= 0 && i < len(b.open) && b.open[i] }

func (b *Builder) emit(e llm.Event) bool {
	if b.stopped {
		return false
	}
	e.Partial = &b.Msg
	if !b.yield(e, nil) {
		b.stopped = true
	}
	return !b.stopped
}

// Start emits the start event; it comes once the provider has accepted
// the request.
func (b *Builder) Start() bool {
	b.started = true
	return b.emit(llm.Event{Type: llm.EventStart})
}

// Begin appends block c and emits its _start event; it returns the
// block's content index.
func (b *Builder) Begin(c llm.Content) (int, bool) {
	i := len(b.Msg.Content)
	b.Msg.Content = append(b.Msg.Content, c)
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
func (b *Builder) appendTo(i int, cur, s string) string {
	sb := b.texts[i]
	if sb == nil {
		sb = &strings.Builder{}
		sb.WriteString(cur)
		b.texts[i] = sb
	}
	sb.WriteString(s)
	return sb.String()
}

// Text appends s to text block i and emits a text_delta.
func (b *Builder) Text(i int, s string) bool {
	if b.capped || !b.grow(len(s)) {
		return false
	}
	b.Msg.Content[i].Text = b.appendTo(i, b.Msg.Content[i].Text, s)
	return b.emit(llm.Event{Type: llm.EventTextDelta, ContentIndex: i, Delta: s})
}

// Thinking appends s to thinking block i and emits a thinking_delta.
func (b *Builder) Thinking(i int, s string) bool {
	if b.capped || !b.grow(len(s)) {
		return false
	}
	b.Msg.Content[i].Thinking = b.appendTo(i, b.Msg.Content[i].Thinking, s)
	return b.emit(llm.Event{Type: llm.EventThinkingDelta, ContentIndex: i, Delta: s})
}

// ToolArgs appends a fragment of the argument JSON of tool-call block i,
// refreshes the tolerant parse, and emits a toolcall_delta.
func (b *Builder) ToolArgs(i int, frag string) bool {
	a := b.args[i]
	if a == nil {
		return true
	}
	if b.capped || !b.grow(len(frag)) {
		return false
	}
	a.raw = append(a.raw, frag...)
	if n := len(a.raw); n <= argsSnapshotFree || n-a.parsed >= n/8 {
		b.Msg.Content[i].Arguments = jsonpartial.Parse(a.raw)
		a.parsed = n
	}
	return b.emit(llm.Event{Type: llm.EventToolCallDelta, ContentIndex: i, Delta: frag})
}

// ReplaceArgs sets the whole argument text of open tool-call block i, for
// a wire whose end of a call repeats its arguments authoritatively.
func (b *Builder) ReplaceArgs(i int, raw string) {
	if a := b.args[i]; a != nil && string(a.raw) != raw {
		a.raw = append(a.raw[:0], raw...)
		a.parsed = 0
	}
}

// finishArgs makes a call's final arguments: a strict parse, or the
// Invalid marker when the text is not one JSON object.
func (b *Builder) finishArgs(i int) {
	a := b.args[i]
	if a == nil {
		return
	}
	delete(b.args, i)
	if final, err := jsonpartial.Strict(a.raw); err == nil {
		b.Msg.Content[i].Arguments = final
	} else {
		b.Msg.Content[i].Arguments = jsonpartial.Invalid(a.raw)
	}
}

// EndStrict ends tool-call block i if its arguments so far parse strictly
// as one JSON object, and reports whether it did.
func (b *Builder) EndStrict(i int) bool {
	a := b.args[i]
	if a == nil {
		return false
	}
	final, err := jsonpartial.Strict(a.raw)
	if err != nil {
		return false
	}
	delete(b.args, i)
	b.Msg.Content[i].Arguments = final
	b.End(i)
	return true
}

// End closes block i and emits its _end event with the finished block; a
// tool call gets its final arguments (see finishArgs). Ending a block that
// is not open does nothing.
func (b *Builder) End(i int) bool {
	if !b.Open(i) {
		return !b.stopped
	}
	b.open[i] = false
	delete(b.texts, i)
	var t llm.EventType
	switch b.Msg.Content[i].Type {
	case llm.ContentThinking:
		t = llm.EventThinkingEnd
	case llm.ContentToolCall:
		t = llm.EventToolCallEnd
		b.finishArgs(i)
	default:
		t = llm.EventTextEnd
	}
	block := b.Msg.Content[i]
	return b.emit(llm.Event{Type: t, ContentIndex: i, Block: &block})
}

// EndAll closes the blocks still open, in order.
func (b *Builder) EndAll() bool {
	for i := range b.open {
		if b.open[i] && !b.End(i) {
			return false
		}
	}
	return !b.stopped
}

func (b *Builder) finishUsage() {
	u := b.Msg.Usage
	u.ComputeTotal()
	u.ApplyPrices(b.prices)
}

// Done ends a successful stream: the open blocks end, usage gets its
// total and cost, and the done event carries the message. The stop reason
// follows the content where wires are loose about it: a reply that called
// tools ends in toolUse even if the server said stop, and one that called
// none ends in stop even if the server said tool_calls.
func (b *Builder) Done(reason llm.StopReason) {
	if !b.EndAll() {
		return
	}
	switch calls := len(b.Msg.ToolCalls()) > 0; {
	case reason == llm.StopReasonStop && calls:
		reason = llm.StopReasonToolUse
	case reason == llm.StopReasonToolUse && !calls:
		reason = llm.StopReasonStop
	}
	b.finishUsage()
	b.Msg.StopReason = reason
	b.finished = true
	b.emit(llm.Event{Type: llm.EventDone, Reason: reason, Message: &b.Msg})
}

// Fail ends the stream with err: before the start event as a bare error,
// after it as an error event carrying the partial message, whose open tool
// calls get their final (possibly Invalid) arguments. The stop reason is
// aborted for the caller's cancellation, error for anything else.
func (b *Builder) Fail(err error) {
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
	b.Msg.StopReason = reason
	b.Msg.ErrorMessage = err.Error()
	b.emit(llm.Event{Type: llm.EventError, Reason: reason, Message: &b.Msg, Err: err})
}

func isProviderError(err error) bool {
	var pe *llm.ProviderError
	return errors.As(err, &pe)
}
