package anthropic

import (
	"bytes"
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
)

// The request body of POST /v1/messages.
type request struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	Stream      bool            `json:"stream"`
	System      []block         `json:"system,omitempty"`
	Messages    []message       `json:"messages"`
	Tools       []tool          `json:"tools,omitempty"`
	ToolChoice  *toolChoice     `json:"tool_choice,omitempty"`
	Thinking    *thinkingConfig `json:"thinking,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is any content block we send; only the fields of its type are set.
type block struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Source       *imageSource    `json:"source,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      []block         `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
	// EagerInputStreaming streams the tool's input as it is written.
	EagerInputStreaming bool `json:"eager_input_streaming,omitempty"`
}

type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

// ThinkingBudget returns the thinking token budget of a level (0 for off).
func ThinkingBudget(level llm.ThinkingLevel) int { return thinkingBudgets[level] }

var thinkingBudgets = map[llm.ThinkingLevel]int{
	llm.ThinkingMinimal: 1024,
	llm.ThinkingLow:     2048,
	llm.ThinkingMedium:  8192,
	llm.ThinkingHigh:    16384,
	llm.ThinkingXHigh:   32768,
}

// defaultMaxTokens is the output cap when neither the request nor the
// model info gives one.
const defaultMaxTokens = 8192

func (m *Model) buildRequest(req *llm.Request) *request {
	info := &m.cfg.Info
	r := &request{Model: info.ID, Stream: true}
	r.MaxTokens = req.Options.MaxTokens
	if r.MaxTokens <= 0 {
		r.MaxTokens = info.MaxTokens
	}
	if r.MaxTokens <= 0 {
		r.MaxTokens = defaultMaxTokens
	}
	if lvl := req.Options.Thinking; lvl.Enabled() && info.Reasoning {
		budget := thinkingBudgets[lvl]
		if budget == 0 {
			budget = thinkingBudgets[llm.ThinkingMedium]
		}
		// The budget comes out of max_tokens: make room for it, within the
		// model's output limit.
		total := r.MaxTokens + budget
		if info.MaxTokens > 0 && total > info.MaxTokens {
			total = info.MaxTokens
		}
		if budget >= total {
			budget = max(1024, total-1024)
		}
		if budget < total {
			r.MaxTokens = total
			r.Thinking = &thinkingConfig{Type: "enabled", BudgetTokens: budget}
		}
	}
	if r.Thinking == nil {
		r.Temperature = req.Options.Temperature
	}
	if req.SystemPrompt != "" {
		r.System = []block{{Type: "text", Text: req.SystemPrompt, CacheControl: ephemeral}}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		eager := m.cfg.EagerToolInput != nil && *m.cfg.EagerToolInput
		r.Tools = append(r.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema, EagerInputStreaming: eager})
	}
	if n := len(r.Tools); n > 0 {
		r.Tools[n-1].CacheControl = ephemeral
		switch c := req.Options.ToolChoice; c {
		case "", "auto":
		case "none":
			r.ToolChoice = &toolChoice{Type: "none"}
		case "required", "any":
			r.ToolChoice = &toolChoice{Type: "any"}
		default:
			r.ToolChoice = &toolChoice{Type: "tool", Name: c}
		}
		if r.Thinking != nil && r.ToolChoice != nil && r.ToolChoice.Type != "none" {
			// The API refuses thinking while a tool is forced: the caller
			// asked for the tool, so it wins.
			r.Thinking = nil
			r.Temperature = req.Options.Temperature
		}
	}
	r.Messages = m.convertMessages(req.Messages)
	// Cache breakpoint on the latest user turn.
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			c := r.Messages[i].Content
			c[len(c)-1].CacheControl = ephemeral
			break
		}
	}
	return r
}

// convertMessages turns the history into Anthropic turns: tool results
// become user turns of tool_result blocks (consecutive ones merged), failed
// assistant messages without tool calls are left out, and thinking is
// replayed as thinking only to the model that produced it.
func (m *Model) convertMessages(msgs []llm.Message) []message {
	out := make([]message, 0, len(msgs))
	ids := wire.NewCallIDs(64) // Anthropic refuses an id used twice in a request
	for i := range msgs {
		out = m.convertMessage(out, &msgs[i], ids)
	}
	return out
}

// convertMessage appends the turn of one history message to out, or adds
// a tool result to the turn of results out ends with.
func (m *Model) convertMessage(out []message, msg *llm.Message, ids *wire.CallIDs) []message {
	switch msg.Role {
	case llm.RoleUser:
		blocks := userBlocks(msg.Content)
		if len(blocks) > 0 {
			out = append(out, message{Role: "user", Content: blocks})
		}
	case llm.RoleAssistant:
		blocks := m.assistantBlocks(msg, ids)
		if len(blocks) > 0 {
			out = append(out, message{Role: "assistant", Content: blocks})
		}
	case llm.RoleToolResult:
		b := block{Type: "tool_result", ToolUseID: ids.Result(msg.ToolCallID), IsError: msg.IsError}
		b.Content = userBlocks(msg.Content)
		if n := len(out); n > 0 && out[n-1].Role == "user" && len(out[n-1].Content) > 0 && out[n-1].Content[0].Type == "tool_result" {
			out[n-1].Content = append(out[n-1].Content, b)
		} else {
			out = append(out, message{Role: "user", Content: []block{b}})
		}
	}
	return out
}

// histState is where an incremental build continues from: the call ids
// chosen so far and the turns not yet encoded (the last turn, which a
// tool result may still join, and the turns from the cache breakpoint on,
// which moves).
type histState struct {
	ids  *wire.CallIDs
	open []message
}

// encodeRequest is json.Marshal(buildRequest(req)), byte for byte, with
// the history's settled turns taken from the model's History when the
// request continues the conversation of the one before: only the
// messages appended since are converted, and only the turns they change
// are encoded. It returns the request without its messages, for its
// other fields.
func (m *Model) encodeRequest(req *llm.Request) (wire.Encoded, *request, error) {
	r := m.buildRequest(&llm.Request{SystemPrompt: req.SystemPrompt, Tools: req.Tools, Options: req.Options})
	r.Messages = nil
	head, err := json.Marshal(r)
	if err != nil {
		return nil, nil, err
	}
	msgs := req.Messages
	n, enc, st := m.hist.Take(msgs)
	if st == nil {
		n, enc, st = 0, nil, &histState{ids: wire.NewCallIDs(64)}
	}
	out := st.open
	for i := n; i < len(msgs); i++ {
		out = m.convertMessage(out, &msgs[i], st.ids)
	}
	// The breakpoint goes on the latest user turn (as buildRequest puts
	// it); the turns before it and before the last are settled.
	bp := -1
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "user" {
			bp = i
			break
		}
	}
	settled := max(0, len(out)-1)
	if bp >= 0 {
		settled = min(settled, bp)
	}
	if enc, err = wire.AppendElements(enc, out[:settled]); err != nil {
		m.hist.Drop()
		return nil, nil, err
	}
	open := append([]message(nil), out[settled:]...)
	m.hist.Keep(msgs, n, enc, &histState{ids: st.ids, open: open})
	rest := append([]message(nil), open...)
	if bp >= 0 {
		c := append([]block(nil), rest[bp-settled].Content...)
		c[len(c)-1].CacheControl = ephemeral
		rest[bp-settled].Content = c
	}
	last, err := wire.AppendElements(nil, rest)
	if err != nil {
		m.hist.Drop()
		return nil, nil, err
	}
	body, err := wire.Splice(head, "messages", "[]", enc, last)
	return body, r, err
}

func userBlocks(content []llm.Content) []block {
	blocks := make([]block, 0, len(content))
	for _, c := range content {
		switch c.Type {
		case llm.ContentText:
			if c.Text != "" {
				blocks = append(blocks, block{Type: "text", Text: c.Text})
			}
		case llm.ContentImage:
			blocks = append(blocks, block{Type: "image", Source: &imageSource{Type: "base64", MediaType: c.MimeType, Data: c.Data}})
		}
	}
	return blocks
}

func (m *Model) assistantBlocks(msg *llm.Message, ids *wire.CallIDs) []block {
	ids.Turn()
	if wire.Dropped(msg) {
		return nil
	}
	same := m.site.Made(msg, llm.APIAnthropicMessages)
	blocks := make([]block, 0, len(msg.Content))
	for _, c := range msg.Content {
		switch c.Type {
		case llm.ContentText:
			if c.Text != "" {
				blocks = append(blocks, block{Type: "text", Text: c.Text})
			}
		case llm.ContentThinking:
			switch {
			case same && c.Redacted && c.ThinkingSignature != "":
				blocks = append(blocks, block{Type: "redacted_thinking", Data: c.ThinkingSignature})
			case same && c.ThinkingSignature != "" && !c.Redacted:
				thinking := c.Thinking
				blocks = append(blocks, block{Type: "thinking", Thinking: &thinking, Signature: c.ThinkingSignature})
			case !c.Redacted && c.Thinking != "":
				blocks = append(blocks, block{Type: "text", Text: c.Thinking})
			}
		case llm.ContentToolCall:
			blocks = append(blocks, block{Type: "tool_use", ID: ids.Call(c.ID), Name: c.Name, Input: wire.ObjectArgs(c.Arguments)})
		}
	}
	return blocks
}
