package openai

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

// eventName is the type of a Responses event. Known names decode without
// allocating; one arrives with every event.
type eventName string

var knownEventNames = wire.NewNames[eventName](
	"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done",
	"response.content_part.added", "response.content_part.done", "response.output_text.delta",
	"response.output_text.done", "response.refusal.delta", "response.reasoning_summary_part.added",
	"response.reasoning_summary_part.done", "response.reasoning_summary_text.delta",
	"response.reasoning_summary_text.done", "response.reasoning_text.delta",
	"response.function_call_arguments.delta", "response.function_call_arguments.done",
	"response.completed", "response.incomplete", "response.failed", "response.cancelled", "error",
)

// UnmarshalJSON implements json.Unmarshaler.
func (n *eventName) UnmarshalJSON(b []byte) (err error) {
	*n, err = knownEventNames.Decode(b)
	return err
}

// responsesEvent is one Responses API stream event; only the fields of its
// type are set.
type responsesEvent struct {
	Type        eventName       `json:"type"`
	OutputIndex int             `json:"output_index"`
	Delta       lenientString   `json:"delta"`
	Item        json.RawMessage `json:"item"`
	Arguments   lenientString   `json:"arguments"`
	Response    struct {
		Status            string `json:"status"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Error json.RawMessage `json:"error"`
		Usage *struct {
			InputTokens        int `json:"input_tokens"`
			OutputTokens       int `json:"output_tokens"`
			InputTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	} `json:"response"`
	// The error event's own fields.
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// lenientString is a string field that other event and item types fill
// with something else: a built-in tool's "arguments":{} or a shell
// output's object "delta". Anything but a string reads as "", so an event
// we do not model never fails the decoding of the stream.
type lenientString string

// UnmarshalJSON implements json.Unmarshaler.
func (l *lenientString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = lenientString(s)
	}
	return nil
}

// outputItem is the part of an output item the decoder reads.
type outputItem struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	CallID    string        `json:"call_id"`
	Name      string        `json:"name"`
	Arguments lenientString `json:"arguments"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

func (m *ResponsesModel) stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		b := wire.NewBuilder(m.cfg.Info, m.site.Provider, llm.APIOpenAIResponses, yield)
		body, rreq, err := m.encodeRequest(req)
		if err != nil {
			b.Fail(fmt.Errorf("%s: encode request: %w", m.site.Provider, err))
			return
		}
		b.LimitOutput(rreq.MaxOutputTokens)
		wire.Call(ctx, b, m.post(), body, &responsesDecoder{m: m, b: b, items: map[int]int{}})
	}
}

// Event implements wire.Decoder.
func (d *responsesDecoder) Event(ev *sse.Event) (bool, error) {
	if ev.Done() {
		return false, nil // a proxy's sentinel after the terminal event
	}
	return d.handle(ev)
}

// Ended implements wire.Decoder: a reply ends with a terminal event.
func (d *responsesDecoder) Ended() bool { return false }

// responsesDecoder maps Responses events onto the builder. Output items
// become blocks: reasoning → thinking (the item JSON kept as the signature,
// replayed next turn), message → text (its id as the text signature),
// function_call → a tool call with id "call_id|item_id".
type responsesDecoder struct {
	m     *ResponsesModel
	b     *wire.Builder
	items map[int]int // output_index → content index
	parts map[int]int // content index → summary parts seen
	json  wire.JSONReader
	ev    responsesEvent
}

func (d *responsesDecoder) handle(ev *sse.Event) (bool, error) {
	m, b := d.m, d.b
	d.ev = responsesEvent{}
	e := &d.ev
	if err := d.json.Decode(ev.Data, e); err != nil {
		if !json.Valid(ev.Data) {
			return false, wire.Malformed(m.site.Provider, m.cfg.Info.ID, "the provider sent an event that is not valid JSON", ev.Data)
		}
		// Valid JSON in a shape we do not read: one odd event does not
		// end a stream a client could finish. Only the events that end
		// the reply must be read.
		var head struct {
			Type string `json:"type"`
		}
		json.Unmarshal(ev.Data, &head)
		switch head.Type {
		case "response.completed", "response.incomplete", "response.failed", "response.cancelled", "error":
			return false, wire.Malformed(m.site.Provider, m.cfg.Info.ID, "the provider sent a "+head.Type+" event this client cannot read", ev.Data)
		}
		return false, nil
	}
	if e.Type == "" {
		e.Type = eventName(ev.Type)
	}
	switch e.Type {
	case "response.output_item.added":
		var it outputItem
		if err := json.Unmarshal(e.Item, &it); err != nil {
			return false, nil // an item of a shape we do not model
		}
		if i, ok := d.items[e.OutputIndex]; ok {
			// Its text came first (a delta before the item): the block
			// is there, the item only names it.
			if it.Type == "message" && b.Msg.Content[i].Type == llm.ContentText {
				b.Msg.Content[i].TextSignature = it.ID
			}
			return false, nil
		}
		var c llm.Content
		switch it.Type {
		case "reasoning":
			c = llm.Content{Type: llm.ContentThinking}
		case "message":
			c = llm.Content{Type: llm.ContentText, TextSignature: it.ID}
		case "function_call":
			id := it.CallID
			if it.ID != "" {
				id += "|" + it.ID
			}
			c = llm.Content{Type: llm.ContentToolCall, ID: id, Name: it.Name, Arguments: json.RawMessage("{}")}
		default:
			return false, nil // built-in tools and other items we do not model
		}
		i, ok := b.Begin(c)
		d.items[e.OutputIndex] = i
		if ok && it.Type == "function_call" && it.Arguments != "" {
			b.ToolArgs(i, string(it.Arguments))
		}
	case "response.output_text.delta", "response.refusal.delta":
		if e.Delta == "" {
			break
		}
		if _, seen := d.items[e.OutputIndex]; !seen {
			// Text before its output_item.added: keep it in a block of
			// its own, which the item names when it comes.
			i, ok := b.Begin(llm.Content{Type: llm.ContentText})
			d.items[e.OutputIndex] = i
			if !ok {
				break
			}
		}
		if i, ok := d.block(e.OutputIndex, llm.ContentText); ok {
			b.Text(i, string(e.Delta))
		}
	case "response.reasoning_summary_part.added":
		if i, ok := d.block(e.OutputIndex, llm.ContentThinking); ok {
			if d.parts == nil {
				d.parts = map[int]int{}
			}
			if d.parts[i] > 0 {
				b.Thinking(i, "\n\n")
			}
			d.parts[i]++
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if i, ok := d.block(e.OutputIndex, llm.ContentThinking); ok && e.Delta != "" {
			b.Thinking(i, string(e.Delta))
		}
	case "response.function_call_arguments.delta":
		if i, ok := d.block(e.OutputIndex, llm.ContentToolCall); ok && e.Delta != "" {
			b.ToolArgs(i, string(e.Delta))
		}
	case "response.output_item.done":
		i, ok := d.items[e.OutputIndex]
		if !ok {
			d.keepItem(e.Item)
			return false, nil
		}
		var it outputItem
		json.Unmarshal(e.Item, &it)
		switch b.Msg.Content[i].Type {
		case llm.ContentThinking:
			b.Msg.Content[i].ThinkingSignature = string(e.Item)
			if b.Msg.Content[i].Thinking == "" && len(it.Summary) > 0 {
				var parts []string
				for _, s := range it.Summary {
					parts = append(parts, s.Text)
				}
				b.Thinking(i, joinParts(parts))
			}
		case llm.ContentToolCall:
			// The finished item's arguments are authoritative.
			if it.Arguments != "" {
				b.ReplaceArgs(i, string(it.Arguments))
			}
		}
		b.End(i)
	case "response.completed", "response.incomplete", "response.failed", "response.cancelled":
		return true, d.finish(e, ev.Data)
	case "error":
		return true, llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, codeStatus(e.Code), nil, ev.Data)
	}
	return false, nil
}

// ItemsKey is the Message.Extra key under which an assistant message keeps
// the output items the decoder does not model (a server-side tool's call,
// a shell output), each with the number of content blocks before it, so
// the next request can give them back in place: a reasoning item must be
// followed by the item it led to.
const ItemsKey = "openaiResponsesItems"

// keptItem is one entry of ItemsKey.
type keptItem struct {
	Before int             `json:"before"`
	Item   json.RawMessage `json:"item"`
}

// keepItem records a finished output item of a type the decoder does not
// model, for replay.
func (d *responsesDecoder) keepItem(item json.RawMessage) {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(item, &head) != nil || head.Type == "" {
		return
	}
	msg := &d.b.Msg
	var kept []keptItem
	if raw, ok := msg.Extra[ItemsKey]; ok {
		json.Unmarshal(raw, &kept)
	}
	kept = append(kept, keptItem{Before: len(msg.Content), Item: append(json.RawMessage(nil), item...)})
	raw, err := json.Marshal(kept)
	if err != nil {
		return
	}
	if msg.Extra == nil {
		msg.Extra = map[string]json.RawMessage{}
	}
	msg.Extra[ItemsKey] = raw
}

func joinParts(parts []string) string {
	var sb bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString(p)
	}
	return sb.String()
}

// codeStatus reads a numeric error code as an HTTP status.
func codeStatus(code json.RawMessage) int {
	var n int
	if json.Unmarshal(bytes.Trim(code, `"`), &n) == nil && n >= 400 && n <= 599 {
		return n
	}
	return 0
}

// block returns the open content index for an output index when it holds a
// block of type t.
func (d *responsesDecoder) block(outputIndex int, t llm.ContentType) (int, bool) {
	i, ok := d.items[outputIndex]
	if !ok || d.b.Msg.Content[i].Type != t || !d.b.Open(i) {
		return 0, false
	}
	return i, true
}

func (d *responsesDecoder) finish(e *responsesEvent, data []byte) error {
	m, b := d.m, d.b
	resp := &e.Response
	if u := resp.Usage; u != nil {
		cached := 0
		if u.InputTokensDetails != nil {
			cached = u.InputTokensDetails.CachedTokens
		}
		b.Msg.Usage.Input = max(0, u.InputTokens-cached)
		b.Msg.Usage.CacheRead = cached
		b.Msg.Usage.Output = u.OutputTokens
	}
	status := resp.Status
	if status == "" {
		status = strings.TrimPrefix(string(e.Type), "response.")
	}
	switch status {
	case "completed":
		b.Done(llm.StopReasonStop) // toolUse when it called tools
		return nil
	case "incomplete":
		if resp.IncompleteDetails != nil && resp.IncompleteDetails.Reason == "content_filter" {
			return llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, []byte("content_filter: the provider's content filter stopped the reply"))
		}
		b.Done(llm.StopReasonLength)
		return nil
	default:
		body := []byte(resp.Error)
		if len(body) == 0 || string(body) == "null" {
			body = data
		}
		return llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, body)
	}
}
