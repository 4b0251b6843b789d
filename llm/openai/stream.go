package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
	"github.com/agentloop/agentloop/llm/jsonpartial"
	"github.com/agentloop/agentloop/llm/sse"
)

// chunk is one chat.completion.chunk (or an error object).
type chunk struct {
	Choices []choice        `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
	XGroq   *struct {
		Usage *usage `json:"usage"`
	} `json:"x_groq"`
}

type choice struct {
	Delta struct {
		Content          deltaContent    `json:"content"`
		Refusal          string          `json:"refusal"`
		ReasoningContent string          `json:"reasoning_content"`
		Reasoning        string          `json:"reasoning"`
		ReasoningText    string          `json:"reasoning_text"`
		ToolCalls        []toolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
	Usage        *usage `json:"usage"`
}

// deltaContent is a delta's content: a string, or (Mistral's reasoning
// models) an array of parts, text and thinking, whose thinking holds text
// parts of its own:
//
//	[{"type":"thinking","thinking":[{"type":"text","text":"…"}]}, {"type":"text","text":"…"}]
type deltaContent struct {
	text  string
	parts []contentPiece // set for an array, in order
}

// contentPiece is the text of one part of an array content.
type contentPiece struct {
	thinking bool
	text     string
}

// UnmarshalJSON implements json.Unmarshaler. Parts of other types (an
// image, a reference) are skipped; a content of another JSON type reads
// as empty.
func (c *deltaContent) UnmarshalJSON(b []byte) error {
	*c = deltaContent{parts: c.parts[:0]}
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &c.text)
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type     string          `json:"type"`
			Text     string          `json:"text"`
			Thinking json.RawMessage `json:"thinking"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return nil // parts of a shape we do not know
		}
		for _, p := range parts {
			switch p.Type {
			case "text":
				if p.Text != "" {
					c.parts = append(c.parts, contentPiece{text: p.Text})
				}
			case "thinking":
				if t := thinkingText(p.Thinking); t != "" {
					c.parts = append(c.parts, contentPiece{thinking: true, text: t})
				}
			}
		}
	}
	return nil
}

// thinkingText reads a thinking part's text: a string, or text parts.
func thinkingText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

type toolCallDelta struct {
	Index    index  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// index is a tool call's optional index, decoded without allocating.
type index struct {
	n   int
	set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *index) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("tool call index %s is not a whole number", b)
	}
	x.n, x.set = n, true
	return nil
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// DeepSeek reports its cache hits here.
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"`
}

// apply sets the message usage; prompt_tokens includes the cached part,
// which llm.Usage counts apart.
func (u *usage) apply(to *llm.Usage) {
	cached := u.PromptCacheHitTokens
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > 0 {
		cached = u.PromptTokensDetails.CachedTokens
	}
	to.Input = max(0, u.PromptTokens-cached)
	to.CacheRead = cached
	to.Output = u.CompletionTokens
}

func (m *Model) stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		b := wire.NewBuilder(m.cfg.Info, m.site.Provider, llm.APIOpenAICompletions, yield)
		body, creq, err := m.encodeRequest(req)
		if err != nil {
			b.Fail(fmt.Errorf("%s: encode request: %w", m.site.Provider, err))
			return
		}
		b.LimitOutput(max(creq.MaxTokens, creq.MaxCompletionTokens))
		wire.Call(ctx, b, m.post(), body, &decoder{m: m, b: b, calls: map[int]int{}, ends: map[int]*jsonpartial.ObjectEnd{}, ids: map[string]bool{}, sent: map[int]string{}, cur: -1})
	}
}

// Event implements wire.Decoder.
func (d *decoder) Event(ev *sse.Event) (bool, error) {
	if ev.Done() {
		if d.finish == "" && len(d.b.Msg.Content) == 0 {
			return true, wire.Truncated(d.m.site.Provider, d.m.cfg.Info.ID)
		}
		d.done()
		return true, nil
	}
	return false, d.handle(ev)
}

// Ended implements wire.Decoder: without [DONE], a reply is complete when
// it said it was finished.
func (d *decoder) Ended() bool {
	if d.finish == "" {
		return false
	}
	d.done()
	return true
}

var _ wire.WholeDecoder = (*decoder)(nil)

// decoder maps chunks onto the builder. Blocks are sequential: a new kind
// of content closes the block before it, and a new tool call closes the
// call before it.
//
// Chat Completions has no event that ends a tool call, so a call's block
// also ends as soon as its arguments hold one whole JSON object that
// parses strictly (and its name is known): the call can start while the
// model keeps talking, instead of waiting for the next call or
// finish_reason. A complete object cannot be validly extended, so once a
// call's block has ended, later fragments for it may only repeat its id,
// its name or its whole arguments (as some proxies do in the last chunk),
// or carry whitespace (all ignored); anything else is a protocol error
// that fails the stream, since the call may already be running with the
// arguments it had.
type decoder struct {
	m      *Model
	b      *wire.Builder
	cur    int                            // content index of the open block, -1 for none
	calls  map[int]int                    // tool_calls index → content index
	ends   map[int]*jsonpartial.ObjectEnd // content index of an open call → its arguments' end
	ids    map[string]bool                // the call ids of this message
	sent   map[int]string                 // content index of a call → the id the server gave it
	finish string
	// refused is set once the model sent refusal text.
	refused bool
	ch      chunk
	json    wire.JSONReader
}

func (d *decoder) handle(ev *sse.Event) error {
	m := d.m
	// Reuse the backing arrays of the choices and of the first choice's
	// tool calls, zeroed: the decoder merges into what is there.
	choices := d.ch.Choices
	var calls []toolCallDelta
	if len(choices) > 0 {
		calls = choices[0].Delta.ToolCalls
		clear(calls[:cap(calls)])
	}
	clear(choices)
	if len(choices) > 0 {
		choices[0].Delta.ToolCalls = calls[:0]
	}
	d.ch = chunk{Choices: choices[:0]}
	c := &d.ch
	if err := d.json.Decode(ev.Data, c); err != nil {
		return wire.Unreadable(m.site.Provider, m.cfg.Info.ID, ev.Data)
	}
	return d.apply(c, ev.Data)
}

// Whole implements wire.WholeDecoder: a reply that came as one
// chat.completion object, from a server that does not stream, is replayed
// as one chunk.
func (d *decoder) Whole(data []byte) {
	m, b := d.m, d.b
	var full struct {
		Choices []struct {
			Message struct {
				Content          deltaContent `json:"content"`
				Refusal          string       `json:"refusal"`
				ReasoningContent string       `json:"reasoning_content"`
				Reasoning        string       `json:"reasoning"`
				ToolCalls        []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *usage          `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &full); err != nil || (len(full.Choices) == 0 && len(full.Error) == 0) {
		b.Fail(wire.Malformed(m.site.Provider, m.cfg.Info.ID, "the provider answered with JSON that is not a chat completion", data))
		return
	}
	c := &d.ch
	c.Usage, c.Error = full.Usage, full.Error
	if len(full.Choices) > 0 {
		fc := &full.Choices[0]
		c.Choices = make([]choice, 1)
		ch := &c.Choices[0]
		ch.FinishReason = fc.FinishReason
		if ch.FinishReason == "" {
			ch.FinishReason = "stop"
		}
		ch.Delta.Content = fc.Message.Content
		ch.Delta.Refusal = fc.Message.Refusal
		ch.Delta.ReasoningContent = fc.Message.ReasoningContent
		ch.Delta.Reasoning = fc.Message.Reasoning
		for i, tc := range fc.Message.ToolCalls {
			idx := i
			ch.Delta.ToolCalls = append(ch.Delta.ToolCalls, toolCallDelta{Index: index{n: idx, set: true}, ID: tc.ID})
			last := &ch.Delta.ToolCalls[len(ch.Delta.ToolCalls)-1]
			last.Function.Name, last.Function.Arguments = tc.Function.Name, tc.Function.Arguments
		}
	}
	if err := d.apply(c, data); err != nil {
		b.Fail(err)
		return
	}
	d.done()
}

// apply maps one decoded chunk onto the builder.
func (d *decoder) apply(c *chunk, data []byte) error {
	m, b := d.m, d.b
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return d.streamError(data, c.Error)
	}
	if c.Usage != nil {
		c.Usage.apply(b.Msg.Usage)
	} else if c.XGroq != nil && c.XGroq.Usage != nil {
		c.XGroq.Usage.apply(b.Msg.Usage)
	}
	if len(c.Choices) == 0 {
		return nil // the usage-only chunk
	}
	ch := &c.Choices[0]
	if ch.Usage != nil && c.Usage == nil {
		ch.Usage.apply(b.Msg.Usage)
	}
	delta := &ch.Delta
	for i, r := range [...]string{delta.ReasoningContent, delta.Reasoning, delta.ReasoningText} {
		if r != "" {
			if !d.ensure(llm.ContentThinking, llm.Content{Type: llm.ContentThinking, ThinkingSignature: reasoningFields[i]}) {
				return nil
			}
			b.Thinking(d.cur, r)
			break
		}
	}
	if !d.content(delta.Content.text, false) {
		return nil
	}
	for _, p := range delta.Content.parts {
		if !d.content(p.text, p.thinking) {
			return nil
		}
	}
	if delta.Refusal != "" {
		// The model's refusal is its answer: the text is kept, and the
		// reply ends as refused.
		d.refused = true
		if !d.content(delta.Refusal, false) {
			return nil
		}
	}
	for i := range delta.ToolCalls {
		tc := &delta.ToolCalls[i]
		idx := i
		if tc.Index.set {
			idx = tc.Index.n
		}
		ci, known := d.calls[idx]
		if known && tc.ID != "" && d.sent[ci] != "" && tc.ID != d.sent[ci] {
			known = false // a new id on the same index starts a new call
		}
		if !known {
			id := tc.ID
			if id == "" || d.ids[id] {
				// No id, or one an earlier call of this message has
				// (servers that number calls per message): results are
				// matched to calls by id, so make one.
				id = wire.NewCallID("call_")
			}
			d.ids[id] = true
			d.closeCur()
			var ok bool
			ci, ok = b.Begin(llm.Content{Type: llm.ContentToolCall, ID: id, Name: tc.Function.Name, Arguments: json.RawMessage("{}")})
			d.cur = ci
			d.calls[idx] = ci
			d.sent[ci] = tc.ID
			d.ends[ci] = &jsonpartial.ObjectEnd{}
			if !ok {
				return nil
			}
		} else if !b.Open(ci) {
			if a := tc.Function.Arguments; isBlank(a) || strings.TrimSpace(a) == string(b.Msg.Content[ci].Arguments) {
				continue // a repeat of the id, the name or the whole arguments, or whitespace
			}
			return wire.Malformed(m.site.Provider, m.cfg.Info.ID, fmt.Sprintf("more arguments arrived for tool call %q after its block had ended", b.Msg.Content[ci].ID), data)
		}
		if tc.Function.Name != "" && b.Msg.Content[ci].Name == "" {
			b.Msg.Content[ci].Name = tc.Function.Name
		}
		if tc.Function.Arguments != "" && !b.ToolArgs(ci, tc.Function.Arguments) {
			return nil
		}
		if !d.endComplete(ci, tc.Function.Arguments) {
			return nil
		}
	}
	if ch.FinishReason != "" {
		d.finish = ch.FinishReason
		if d.finish == "error" {
			return llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, data)
		}
		// The reply is complete: end the blocks now so tool calls can
		// start before the usage chunk and [DONE] arrive.
		b.EndAll()
		d.cur = -1
	}
	return nil
}

// content appends text to the open text (or, for thinking, thinking)
// block; false means the consumer has stopped.
func (d *decoder) content(text string, thinking bool) bool {
	if text == "" {
		return true
	}
	if thinking {
		if !d.ensure(llm.ContentThinking, llm.Content{Type: llm.ContentThinking}) {
			return false
		}
		return d.b.Thinking(d.cur, text)
	}
	if !d.ensure(llm.ContentText, llm.Content{Type: llm.ContentText}) {
		return false
	}
	return d.b.Text(d.cur, text)
}

// ensure makes the open block one of kind t, closing another kind and
// beginning c if needed.
func (d *decoder) ensure(t llm.ContentType, c llm.Content) bool {
	if d.cur >= 0 && d.b.Msg.Content[d.cur].Type == t && d.b.Open(d.cur) {
		return true
	}
	d.closeCur()
	i, ok := d.b.Begin(c)
	d.cur = i
	return ok
}

// endComplete feeds a fragment of call ci's arguments to its end tracker
// and ends the call's block once the arguments are one complete object
// that parses strictly and the call has a name. It reports false when the
// consumer has stopped.
func (d *decoder) endComplete(ci int, frag string) bool {
	end := d.ends[ci]
	if end == nil || !end.Feed(frag) || d.b.Msg.Content[ci].Name == "" {
		return true
	}
	delete(d.ends, ci)
	if !d.b.EndStrict(ci) {
		// Balanced but not valid JSON: it can never become valid, so it
		// waits for its normal end and gets Invalid arguments there.
		return true
	}
	if d.cur == ci {
		d.cur = -1
	}
	return !d.b.Stopped()
}

// isBlank reports whether s is empty or JSON whitespace.
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

func (d *decoder) closeCur() {
	if d.cur >= 0 {
		d.b.End(d.cur)
		d.cur = -1
	}
}

func (d *decoder) done() {
	m, b := d.m, d.b
	if d.refused {
		b.Fail(llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, []byte("refusal: the model declined to answer this request: "+b.Msg.Text())))
		return
	}
	reason := llm.StopReasonStop
	switch d.finish {
	case "length", "max_tokens", "max_output_tokens": // the last two from proxies that pass other APIs' reasons through
		reason = llm.StopReasonLength
	case "tool_calls", "function_call":
		reason = llm.StopReasonToolUse
	case "content_filter":
		b.Fail(llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, []byte("content_filter: the provider's content filter stopped the reply")))
		return
	}
	b.Done(reason)
}

// streamError turns an error object in the stream into a ProviderError,
// with the status its code implies when the code is numeric (OpenRouter).
func (d *decoder) streamError(data, obj json.RawMessage) error {
	var e struct {
		Code json.RawMessage `json:"code"`
	}
	status := 0
	if json.Unmarshal(obj, &e) == nil {
		if n, err := strconv.Atoi(string(bytes.Trim(e.Code, `"`))); err == nil && n >= 400 && n <= 599 {
			status = n
		}
	}
	return llm.NewHTTPError(d.m.site.Provider, d.m.cfg.Info.ID, status, nil, data)
}
