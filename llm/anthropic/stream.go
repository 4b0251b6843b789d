package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
	"github.com/agentloop/agentloop/llm/sse"
)

// name is a type field of the stream. Known names decode without
// allocating; they arrive with every event.
type name string

var knownNames = wire.NewNames[name](
	"message_start", "content_block_start", "content_block_delta", "content_block_stop",
	"message_delta", "message_stop", "ping", "error",
	"text", "thinking", "redacted_thinking", "tool_use",
	"text_delta", "thinking_delta", "signature_delta", "input_json_delta",
)

// UnmarshalJSON implements json.Unmarshaler.
func (n *name) UnmarshalJSON(b []byte) (err error) {
	*n, err = knownNames.Decode(b)
	return err
}

// The stream events, decoded into one struct: only the fields of the
// event's type are set.
type streamEvent struct {
	Type    name `json:"type"`
	Message struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage usage  `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock struct {
		Type     name            `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		Data     string          `json:"data"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        name    `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		Signature   string  `json:"signature"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
		// StopDetails explains a refusal.
		StopDetails *stopDetails `json:"stop_details"`
	} `json:"delta"`
	Usage *usage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// stopDetails is what a refusal says of itself.
type stopDetails struct {
	Category    string `json:"category"`
	Explanation string `json:"explanation"`
}

// usage holds the counters; nil fields were absent or null, and leave the
// earlier value alone (message_delta counts are cumulative).
type usage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

func (u *usage) apply(to *llm.Usage) {
	if u.InputTokens != nil {
		to.Input = *u.InputTokens
	}
	if u.OutputTokens != nil {
		to.Output = *u.OutputTokens
	}
	if u.CacheCreationInputTokens != nil {
		to.CacheWrite = *u.CacheCreationInputTokens
	}
	if u.CacheReadInputTokens != nil {
		to.CacheRead = *u.CacheReadInputTokens
	}
}

// errorStatus is the HTTP status each error type stands for, used for
// errors that arrive inside a stream.
var errorStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

func (m *Model) stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		b := wire.NewBuilder(m.cfg.Info, m.site.Provider, llm.APIAnthropicMessages, yield)
		body, areq, err := m.encodeRequest(req)
		if err != nil {
			b.Fail(fmt.Errorf("%s: encode request: %w", m.site.Provider, err))
			return
		}
		b.LimitOutput(areq.MaxTokens)
		var betas []string
		if areq.Thinking != nil && len(areq.Tools) > 0 {
			// Lets Claude think between tool calls, not only before the first.
			betas = append(betas, InterleavedThinkingBeta)
		}
		if e := m.cfg.EagerToolInput; e != nil && !*e && len(areq.Tools) > 0 {
			betas = append(betas, FineGrainedToolStreamingBeta)
		}
		beta := strings.Join(betas, ",")
		wire.Call(ctx, b, m.site.Post(map[string]string{
			"Content-Type":      "application/json",
			"Accept":            "text/event-stream",
			"X-Api-Key":         m.cfg.APIKey,
			"Anthropic-Version": APIVersion,
			"Anthropic-Beta":    beta,
		}), body, &decoder{m: m, b: b})
	}
}

// Event implements wire.Decoder.
func (d *decoder) Event(ev *sse.Event) (bool, error) {
	if ev.Done() {
		return false, nil // a proxy's sentinel after message_stop
	}
	return d.handle(ev)
}

// Ended implements wire.Decoder: a reply ends with message_stop.
func (d *decoder) Ended() bool { return false }

// decoder maps the stream's events onto the builder.
type decoder struct {
	m          *Model
	b          *wire.Builder
	blocks     map[int]int // server index → content index
	stopReason string
	details    *stopDetails
	started    bool // message_start was seen
	ev         streamEvent
	json       wire.JSONReader
}

// handle applies one event; finished is true after message_stop.
func (d *decoder) handle(ev *sse.Event) (finished bool, err error) {
	m, b := d.m, d.b
	d.ev = streamEvent{}
	e := &d.ev
	if err := d.json.Decode(ev.Data, e); err != nil {
		err := wire.Unreadable(m.site.Provider, m.cfg.Info.ID, ev.Data)
		return err != nil, err
	}
	if e.Type == "" {
		e.Type = name(ev.Type)
	}
	switch e.Type {
	case "message_start":
		if d.started {
			// Two messages in one stream (a proxy that concatenated
			// them): merging them would make one reply of two.
			return false, wire.Malformed(m.site.Provider, m.cfg.Info.ID, "the provider sent a second message_start inside one stream", ev.Data)
		}
		d.started = true
		e.Message.Usage.apply(b.Msg.Usage)
	case "content_block_start":
		cb := &e.ContentBlock
		if cb.Type == "" {
			return false, wire.Malformed(m.site.Provider, m.cfg.Info.ID, "content_block_start without a content block", ev.Data)
		}
		var c llm.Content
		switch cb.Type {
		case "text":
			c = llm.Content{Type: llm.ContentText}
		case "thinking":
			c = llm.Content{Type: llm.ContentThinking}
		case "redacted_thinking":
			c = llm.Content{Type: llm.ContentThinking, Redacted: true, ThinkingSignature: cb.Data}
		case "tool_use":
			id := cb.ID
			if id == "" {
				id = wire.NewCallID("toolu_")
			}
			c = llm.Content{Type: llm.ContentToolCall, ID: id, Name: cb.Name, Arguments: json.RawMessage("{}")}
		default:
			return false, nil // server tools and other blocks we do not model
		}
		i, ok := b.Begin(c)
		if d.blocks == nil {
			d.blocks = map[int]int{}
		}
		d.blocks[e.Index] = i
		if !ok {
			return false, nil
		}
		switch {
		case cb.Type == "text" && cb.Text != "":
			b.Text(i, cb.Text)
		case cb.Type == "thinking" && cb.Thinking != "":
			b.Thinking(i, cb.Thinking)
		case cb.Type == "tool_use":
			// The input normally arrives as deltas after an empty {};
			// a non-empty input here is the whole of it.
			if in := bytes.TrimSpace(cb.Input); len(in) > 0 && string(in) != "{}" {
				b.ToolArgs(i, string(in))
			}
		}
	case "content_block_delta":
		i, ok := d.blocks[e.Index]
		if !ok {
			return false, nil
		}
		switch e.Delta.Type {
		case "text_delta":
			b.Text(i, e.Delta.Text)
		case "thinking_delta":
			b.Thinking(i, e.Delta.Thinking)
		case "signature_delta":
			b.Msg.Content[i].ThinkingSignature += e.Delta.Signature
		case "input_json_delta":
			if e.Delta.PartialJSON != "" {
				b.ToolArgs(i, e.Delta.PartialJSON)
			}
		}
	case "content_block_stop":
		if i, ok := d.blocks[e.Index]; ok {
			delete(d.blocks, e.Index)
			b.End(i)
		}
	case "message_delta":
		if e.Delta.StopReason != nil {
			d.stopReason = *e.Delta.StopReason
		}
		if e.Delta.StopDetails != nil {
			d.details = e.Delta.StopDetails
		}
		if e.Usage != nil {
			e.Usage.apply(b.Msg.Usage)
		}
	case "message_stop":
		reason, err := d.mapStop()
		if err != nil {
			return true, err
		}
		b.Done(reason)
		return true, nil
	case "error":
		typ, msg := e.Error.Type, e.Error.Message
		status := errorStatus[typ]
		pe := llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, status, nil, ev.Data)
		if msg != "" && pe.Message == string(bytes.TrimSpace(ev.Data)) {
			pe.Message = typ + ": " + msg
		}
		return true, pe
	}
	return false, nil
}

// mapStop maps the stop reason; the ones that mean failure become errors.
func (d *decoder) mapStop() (llm.StopReason, error) {
	m := d.m
	switch d.stopReason {
	case "end_turn", "stop_sequence", "pause_turn", "":
		return llm.StopReasonStop, nil
	case "tool_use":
		return llm.StopReasonToolUse, nil
	case "max_tokens":
		return llm.StopReasonLength, nil
	case "model_context_window_exceeded":
		pe := llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil,
			[]byte("model_context_window_exceeded: the prompt and the output exceed the model's context window"))
		pe.Reason = llm.ReasonContextOverflow
		return "", pe
	case "refusal", "sensitive":
		text := d.stopReason + ": the model declined to answer this request"
		if sd := d.details; sd != nil {
			if sd.Category != "" {
				text += " (category: " + sd.Category + ")"
			}
			if sd.Explanation != "" {
				text += ": " + sd.Explanation
			}
		}
		pe := llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, []byte(text))
		return "", pe
	default:
		// A stop reason newer than this code: the message is complete.
		return llm.StopReasonStop, nil
	}
}
