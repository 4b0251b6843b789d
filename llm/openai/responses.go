package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
)

// ResponsesModel streams replies from the OpenAI Responses API (POST
// /responses). It implements llm.Model and is safe for concurrent use.
//
// Requests are stateless ("store": false): the whole history is sent each
// time, with earlier reasoning items replayed verbatim (their encrypted
// content included) so reasoning carries across turns.
type ResponsesModel struct {
	settings
	// hist keeps the last request's input items encoded, for the next
	// turn.
	hist *wire.History[*wire.CallIDs]
}

var _ llm.Model = (*ResponsesModel)(nil)

// NewResponses returns a Responses API model for cfg: BaseURL "" means
// DefaultBaseURL, and /responses is appended. Compat is not used.
func NewResponses(cfg Config) *ResponsesModel {
	return &ResponsesModel{settings: newSettings(cfg, "/responses"), hist: &wire.History[*wire.CallIDs]{}}
}

// Info returns the model's description.
func (m *ResponsesModel) Info() llm.ModelInfo { return m.cfg.Info }

// Stream sends req and streams the reply. See llm.Model for the contract.
func (m *ResponsesModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return m.stream(ctx, req)
}

// The request body of POST /responses.
type responsesRequest struct {
	Model           string            `json:"model"`
	Input           []json.RawMessage `json:"input"`
	Stream          bool              `json:"stream"`
	Store           bool              `json:"store"`
	MaxOutputTokens int               `json:"max_output_tokens,omitempty"`
	Temperature     *float64          `json:"temperature,omitempty"`
	Tools           []responsesTool   `json:"tools,omitempty"`
	ToolChoice      any               `json:"tool_choice,omitempty"`
	Reasoning       *responsesEffort  `json:"reasoning,omitempty"`
	Include         []string          `json:"include,omitempty"`
	PromptCacheKey  string            `json:"prompt_cache_key,omitempty"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type responsesEffort struct {
	Effort  string `json:"effort"`
	Summary string `json:"summary,omitempty"`
}

type inputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

func (m *ResponsesModel) buildRequest(req *llm.Request) *responsesRequest {
	info := &m.cfg.Info
	r := &responsesRequest{Model: info.ID, Stream: true, Temperature: req.Options.Temperature, PromptCacheKey: req.Options.SessionID}
	r.MaxOutputTokens = req.Options.MaxTokens
	if r.MaxOutputTokens <= 0 {
		r.MaxOutputTokens = info.MaxTokens
	}
	if lvl := req.Options.Thinking; info.Reasoning && lvl.Enabled() {
		e := string(lvl)
		if lvl == llm.ThinkingXHigh {
			e = string(llm.ThinkingHigh)
		}
		r.Reasoning = &responsesEffort{Effort: e, Summary: "auto"}
		r.Include = []string{"reasoning.encrypted_content"}
		r.Temperature = nil // reasoning models reject it
	}
	add := func(v any) {
		b, err := json.Marshal(v)
		if err == nil {
			r.Input = append(r.Input, b)
		}
	}
	if req.SystemPrompt != "" {
		role := "system"
		if info.Reasoning {
			role = "developer"
		}
		add(map[string]any{"role": role, "content": req.SystemPrompt})
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		r.Tools = append(r.Tools, responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	if len(r.Tools) > 0 {
		switch c := req.Options.ToolChoice; c {
		case "", "auto":
		case "none", "required":
			r.ToolChoice = c
		default:
			r.ToolChoice = map[string]string{"type": "function", "name": c}
		}
	}
	ids := wire.NewCallIDs(0) // a call_id used twice in one input is refused
	for i := range req.Messages {
		m.appendMessage(&req.Messages[i], ids, add)
	}
	return r
}

// appendMessage adds the input items of one history message. Each item
// depends on the message and on the call ids chosen before it only.
func (m *ResponsesModel) appendMessage(msg *llm.Message, ids *wire.CallIDs, add func(any)) {
	info := &m.cfg.Info
	images := info.AcceptsImages() || len(info.Input) == 0
	switch msg.Role {
	case llm.RoleUser:
		var parts []inputPart
		for _, c := range msg.Content {
			switch {
			case c.Type == llm.ContentText && c.Text != "":
				parts = append(parts, inputPart{Type: "input_text", Text: c.Text})
			case c.Type == llm.ContentImage && images:
				parts = append(parts, inputPart{Type: "input_image", ImageURL: "data:" + c.MimeType + ";base64," + c.Data})
			}
		}
		if len(parts) > 0 {
			add(map[string]any{"role": "user", "content": parts})
		}
	case llm.RoleAssistant:
		m.appendAssistant(msg, ids, add)
	case llm.RoleToolResult:
		var text []string
		var imgs []inputPart
		for _, c := range msg.Content {
			switch c.Type {
			case llm.ContentText:
				text = append(text, c.Text)
			case llm.ContentImage:
				if images {
					imgs = append(imgs, inputPart{Type: "input_image", ImageURL: "data:" + c.MimeType + ";base64," + c.Data})
				}
			}
		}
		out := strings.Join(text, "\n")
		if out == "" {
			out = "(no output)"
		}
		callID, _, _ := strings.Cut(msg.ToolCallID, "|")
		add(map[string]any{"type": "function_call_output", "call_id": ids.Result(callID), "output": out})
		if len(imgs) > 0 {
			add(map[string]any{"role": "user", "content": append([]inputPart{{Type: "input_text", Text: "Images from the tool result above:"}}, imgs...)})
		}
	}
}

// encodeRequest is json.Marshal(buildRequest(req)), byte for byte, with
// the history's items taken from the model's History when the request
// continues the conversation of the one before: only the messages
// appended since are converted and encoded. It returns the request
// without its input, for its other fields.
func (m *ResponsesModel) encodeRequest(req *llm.Request) (wire.Encoded, *responsesRequest, error) {
	r := m.buildRequest(&llm.Request{SystemPrompt: req.SystemPrompt, Tools: req.Tools, Options: req.Options})
	var sys []byte
	if len(r.Input) > 0 {
		sys = r.Input[0]
	}
	r.Input = nil
	head, err := json.Marshal(r)
	if err != nil {
		return nil, nil, err
	}
	msgs := req.Messages
	n, enc, ids := m.hist.Take(msgs)
	if ids == nil {
		n, enc, ids = 0, nil, wire.NewCallIDs(0)
	}
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return // as buildRequest leaves an item out
		}
		if len(enc) > 0 {
			enc = append(enc, ',')
		}
		// The whole build compacts each item again, which changes nothing
		// in Marshal's output.
		enc = append(enc, b...)
	}
	for i := n; i < len(msgs); i++ {
		m.appendMessage(&msgs[i], ids, add)
	}
	m.hist.Keep(msgs, n, enc, ids)
	body, err := wire.Splice(head, "input", "null", sys, enc)
	return body, r, err
}

// appendAssistant replays an assistant message as output items: reasoning
// items verbatim (same model only), text as a message, calls as
// function_call items.
func (m *ResponsesModel) appendAssistant(msg *llm.Message, ids *wire.CallIDs, add func(any)) {
	ids.Turn()
	if wire.Dropped(msg) {
		return
	}
	same := m.site.Made(msg, llm.APIOpenAIResponses)
	// Items we do not model go back in place, to the model that made
	// them.
	var kept []keptItem
	if raw, ok := msg.Extra[ItemsKey]; ok && same {
		json.Unmarshal(raw, &kept)
	}
	addKept := func(before int) {
		for len(kept) > 0 && kept[0].Before <= before {
			if json.Valid(kept[0].Item) {
				add(kept[0].Item)
			}
			kept = kept[1:]
		}
	}
	defer addKept(len(msg.Content))
	for i, c := range msg.Content {
		addKept(i)
		switch c.Type {
		case llm.ContentThinking:
			if same && json.Valid([]byte(c.ThinkingSignature)) && strings.HasPrefix(strings.TrimSpace(c.ThinkingSignature), "{") {
				add(json.RawMessage(c.ThinkingSignature))
			} else if c.Thinking != "" && !c.Redacted {
				add(map[string]any{"type": "message", "role": "assistant", "content": []outputText{{Type: "output_text", Text: c.Thinking, Annotations: []any{}}}})
			}
		case llm.ContentText:
			if c.Text == "" {
				continue
			}
			item := map[string]any{"type": "message", "role": "assistant", "status": "completed",
				"content": []outputText{{Type: "output_text", Text: c.Text, Annotations: []any{}}}}
			if same && strings.HasPrefix(c.TextSignature, "msg_") {
				item["id"] = c.TextSignature
			}
			add(item)
		case llm.ContentToolCall:
			callID, itemID, _ := strings.Cut(c.ID, "|")
			sent := ids.Call(callID)
			item := map[string]any{"type": "function_call", "call_id": sent, "name": c.Name, "arguments": argumentText(c.Arguments)}
			// A renamed call repeats an earlier one's id, and its item id
			// would repeat too: the item goes without it.
			if same && sent == callID && strings.HasPrefix(itemID, "fc") {
				item["id"] = itemID
			}
			add(item)
		}
	}
}
