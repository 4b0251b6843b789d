package openai

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
	"github.com/agentloop/agentloop/llm/jsonpartial"
)

// The request body of POST /chat/completions.
type request struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
	Store               *bool           `json:"store,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	Tools               []tool          `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Reasoning           *effort         `json:"reasoning,omitempty"`
	EnableThinking      *bool           `json:"enable_thinking,omitempty"`
	Thinking            *thinkingSwitch `json:"thinking,omitempty"`
	PromptCacheKey      string          `json:"prompt_cache_key,omitempty"`
	// Provider and ProviderOptions carry gateway routing (OpenRouter's
	// provider preferences, the Vercel AI Gateway's).
	Provider        json.RawMessage `json:"provider,omitempty"`
	ProviderOptions map[string]any  `json:"providerOptions,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type effort struct {
	Effort string `json:"effort"`
}

type thinkingSwitch struct {
	Type string `json:"type"`
}

type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // a string, []part, or nil
	// Reasoning replayed under the field it arrived in.
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	Reasoning        string     `json:"reasoning,omitempty"`
	ReasoningText    string     `json:"reasoning_text,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Name             string     `json:"name,omitempty"`
}

type part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

// The reasoning fields compatible servers stream thinking in, in the order
// they are looked for.
var reasoningFields = []string{"reasoning_content", "reasoning", "reasoning_text"}

// toolResultBridge is the assistant turn some servers need between tool
// results and a user message.
const toolResultBridge = "Tool results received."

func (m *Model) buildRequest(req *llm.Request) *request {
	info, c := &m.cfg.Info, &m.compat
	r := &request{Model: info.ID, Stream: true, Temperature: req.Options.Temperature}
	if c.SupportsUsageInStreaming {
		r.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if c.SupportsStore {
		f := false
		r.Store = &f
	}
	if c.SupportsPromptCacheKey {
		r.PromptCacheKey = req.Options.SessionID
	}
	maxTokens := req.Options.MaxTokens
	if maxTokens <= 0 {
		maxTokens = info.MaxTokens
	}
	if c.MaxTokensField == "max_completion_tokens" {
		r.MaxCompletionTokens = maxTokens
	} else {
		r.MaxTokens = maxTokens
	}
	if routing := bytes.TrimSpace(c.OpenRouterRouting); len(routing) > 0 && string(routing) != "{}" && string(routing) != "null" {
		r.Provider = json.RawMessage(routing)
	}
	if routing := bytes.TrimSpace(c.VercelGatewayRouting); len(routing) > 0 && string(routing) != "{}" && string(routing) != "null" {
		r.ProviderOptions = map[string]any{"gateway": json.RawMessage(routing)}
	}
	if info.Reasoning {
		m.setReasoning(r, req.Options.Thinking)
	}
	if req.SystemPrompt != "" {
		role := "system"
		if info.Reasoning && c.SupportsDeveloperRole {
			role = "developer"
		}
		r.Messages = append(r.Messages, message{Role: role, Content: req.SystemPrompt})
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		fd := functionDef{Name: t.Name, Description: t.Description, Parameters: params}
		if c.SupportsStrictMode {
			f := false
			fd.Strict = &f
		}
		r.Tools = append(r.Tools, tool{Type: "function", Function: fd})
	}
	if len(r.Tools) > 0 {
		switch choice := req.Options.ToolChoice; choice {
		case "", "auto":
		case "none", "required":
			r.ToolChoice = choice
		default:
			r.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": choice}}
		}
	}
	r.Messages = m.appendMessages(r.Messages, req.Messages)
	return r
}

// encodeRequest is json.Marshal(buildRequest(req)), byte for byte, with
// the history's part taken from the model's History where the request
// continues the conversation of the one before: only the messages
// appended since are converted and encoded. It returns the request
// without its history, for its other fields.
func (m *Model) encodeRequest(req *llm.Request) (wire.Encoded, *request, error) {
	r := m.buildRequest(&llm.Request{SystemPrompt: req.SystemPrompt, Tools: req.Tools, Options: req.Options})
	msgs := req.Messages
	n, enc, cv := m.hist.Take(msgs)
	if cv == nil {
		n, enc, cv = 0, nil, m.newConverter()
	}
	var out []message
	for i := n; i < len(msgs); i++ {
		out = cv.add(out, &msgs[i])
	}
	var err error
	if enc, err = wire.AppendElements(enc, out); err != nil {
		m.hist.Drop()
		return nil, nil, err
	}
	// The images of trailing tool results go out as a user turn at the
	// end of this request only: the next one may bring more results
	// before it, so the kept state is the one before that turn.
	tail := *cv
	last, err := wire.AppendElements(nil, tail.flush(nil))
	if err != nil {
		m.hist.Drop()
		return nil, nil, err
	}
	m.hist.Keep(msgs, n, enc, cv)

	// The system message, if any, stays first; the history follows it.
	var sys []byte
	if r.Messages != nil {
		if sys, err = json.Marshal(&r.Messages[0]); err != nil {
			return nil, nil, err
		}
		r.Messages = nil
	}
	head, err := json.Marshal(r)
	if err != nil {
		return nil, nil, err
	}
	body, err := wire.Splice(head, "messages", "null", sys, enc, last)
	return body, r, err
}

func (m *Model) setReasoning(r *request, level llm.ThinkingLevel) {
	c := &m.compat
	on := level.Enabled()
	switch c.ThinkingFormat {
	case "qwen":
		r.EnableThinking = &on
		return
	case "zai", "deepseek":
		t := "disabled"
		if on {
			t = "enabled"
		}
		r.Thinking = &thinkingSwitch{Type: t}
		if c.ThinkingFormat == "zai" || !on {
			return
		}
		// DeepSeek takes the effort too, under the model's own names.
		e := string(level)
		if mapped, ok := c.ReasoningEffortMap[e]; ok {
			e = mapped
		}
		if e != "" {
			r.ReasoningEffort = e
		}
		return
	}
	if !on || !c.SupportsReasoningEffort {
		return
	}
	e := string(level)
	if mapped, ok := c.ReasoningEffortMap[e]; ok {
		e = mapped
	} else if level == llm.ThinkingXHigh {
		e = string(llm.ThinkingHigh)
	}
	if e == "" {
		return // a level the model does not support (thinkingLevelMap null)
	}
	if c.ThinkingFormat == "openrouter" {
		r.Reasoning = &effort{Effort: e}
	} else {
		r.ReasoningEffort = e
	}
}

func (m *Model) appendMessages(out []message, msgs []llm.Message) []message {
	cv := m.newConverter()
	for i := range msgs {
		out = cv.add(out, &msgs[i])
	}
	return cv.flush(out)
}

// converter turns history messages into Chat Completions messages, one at
// a time, carrying what a message's conversion depends on from the ones
// before it. Between two messages its state is all an incremental build
// (see History) needs to continue exactly as a whole build does.
type converter struct {
	m             *Model
	images        bool
	ids           *wire.CallIDs
	pendingImages []part // images of tool results, re-sent as a user turn
	lastRole      string // role of the last history message sent
}

func (m *Model) newConverter() *converter {
	return &converter{m: m, images: m.cfg.Info.AcceptsImages() || len(m.cfg.Info.Input) == 0, ids: wire.NewCallIDs(40)}
}

func (cv *converter) push(out []message, msg message) []message {
	cv.lastRole = msg.Role
	return append(out, msg)
}

// flush sends the images collected from tool results as a user turn.
func (cv *converter) flush(out []message) []message {
	if len(cv.pendingImages) > 0 {
		parts := append([]part{{Type: "text", Text: "Images from the tool results above:"}}, cv.pendingImages...)
		out = cv.push(out, message{Role: "user", Content: parts})
		cv.pendingImages = nil
	}
	return out
}

func (cv *converter) add(out []message, msg *llm.Message) []message {
	c := &cv.m.compat
	if msg.Role != llm.RoleToolResult {
		out = cv.flush(out)
	}
	switch msg.Role {
	case llm.RoleUser:
		if c.RequiresAssistantAfterToolResult && cv.lastRole == "tool" {
			out = cv.push(out, message{Role: "assistant", Content: toolResultBridge})
		}
		if content := userContent(msg.Content, cv.images); content != nil {
			out = cv.push(out, message{Role: "user", Content: content})
		}
	case llm.RoleAssistant:
		if am, ok := cv.m.assistantMessage(msg, cv.ids); ok {
			out = cv.push(out, am)
		}
	case llm.RoleToolResult:
		var text []string
		for _, b := range msg.Content {
			switch b.Type {
			case llm.ContentText:
				text = append(text, b.Text)
			case llm.ContentImage:
				if cv.images {
					cv.pendingImages = append(cv.pendingImages, imagePart(b))
				}
			}
		}
		content := strings.Join(text, "\n")
		if content == "" {
			content = "(no output)"
			if len(cv.pendingImages) > 0 {
				content = "(see the attached image)"
			}
		}
		tm := message{Role: "tool", Content: content, ToolCallID: cv.ids.Result(msg.ToolCallID)}
		if c.RequiresToolResultName {
			tm.Name = msg.ToolName
		}
		out = cv.push(out, tm)
	}
	return out
}

func imagePart(b llm.Content) part {
	return part{Type: "image_url", ImageURL: &imageURL{URL: "data:" + b.MimeType + ";base64," + b.Data}}
}

// userContent is a plain string for text-only turns, parts otherwise, nil
// when nothing is left.
func userContent(blocks []llm.Content, images bool) any {
	if len(blocks) == 1 && blocks[0].Type == llm.ContentText {
		if blocks[0].Text == "" {
			return nil
		}
		return blocks[0].Text
	}
	parts := make([]part, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case llm.ContentText:
			if b.Text != "" {
				parts = append(parts, part{Type: "text", Text: b.Text})
			}
		case llm.ContentImage:
			if images {
				parts = append(parts, imagePart(b))
			} else {
				parts = append(parts, part{Type: "text", Text: "(an image was omitted: this model does not accept images)"})
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return parts
}

func (m *Model) assistantMessage(msg *llm.Message, ids *wire.CallIDs) (message, bool) {
	c := &m.compat
	ids.Turn()
	calls := msg.ToolCalls()
	if msg.StopReason.Failed() && len(calls) == 0 {
		return message{}, false
	}
	same := msg.API == string(llm.APIOpenAICompletions) && msg.Provider == m.site.Provider
	var text, thinking []string
	field := ""
	for _, b := range msg.Content {
		switch b.Type {
		case llm.ContentText:
			if b.Text != "" {
				text = append(text, b.Text)
			}
		case llm.ContentThinking:
			if b.Thinking == "" || b.Redacted {
				continue
			}
			switch {
			case c.RequiresThinkingAsText || !same:
				text = append(text, b.Thinking)
			case c.SendReasoningContentBack:
				thinking = append(thinking, b.Thinking)
				if field == "" {
					field = b.ThinkingSignature
				}
			}
		}
	}
	am := message{Role: "assistant"}
	if len(text) > 0 {
		am.Content = strings.Join(text, "\n\n")
	}
	if len(thinking) > 0 {
		r := strings.Join(thinking, "")
		if field == "" || !knownReasoningField(field) {
			field = c.ReasoningField
		}
		switch field {
		case "reasoning":
			am.Reasoning = r
		case "reasoning_text":
			am.ReasoningText = r
		default:
			am.ReasoningContent = r
		}
	}
	for _, call := range calls {
		am.ToolCalls = append(am.ToolCalls, toolCall{ID: ids.Call(call.ID), Type: "function",
			Function: functionCall{Name: call.Name, Arguments: argumentText(call.Arguments)}})
	}
	if am.Content == nil && len(am.ToolCalls) == 0 {
		return message{}, false
	}
	return am, true
}

// argumentText is a call's arguments as both OpenAI APIs replay them: the
// JSON text, "{}" for none, and for arguments that did not parse the text
// the model wrote, so it can see its mistake.
func argumentText(args json.RawMessage) string {
	if jsonpartial.IsInvalid(args) {
		var raw string
		if json.Unmarshal(args, &raw) == nil {
			return raw
		}
	}
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}"
	}
	return string(args)
}

func knownReasoningField(f string) bool {
	for _, k := range reasoningFields {
		if f == k {
			return true
		}
	}
	return false
}
