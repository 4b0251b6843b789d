package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Role says who wrote a message.
type Role string

// The three roles of a conversation.
const (
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleToolResult Role = "toolResult"
)

// StopReason says why an assistant message ended.
type StopReason string

// Stop reasons. Error and Aborted mark a failed message: the loop never
// continues from one.
const (
	StopReasonStop    StopReason = "stop"
	StopReasonLength  StopReason = "length"
	StopReasonToolUse StopReason = "toolUse"
	StopReasonError   StopReason = "error"
	StopReasonAborted StopReason = "aborted"
)

// Failed reports whether the reason marks a message that did not complete.
func (r StopReason) Failed() bool { return r == StopReasonError || r == StopReasonAborted }

// Message is one entry of a conversation. Which fields are used depends on
// Role: assistant messages carry provider metadata, usage and a stop reason;
// tool results carry the id and name of the call they answer.
//
// Fields this version does not know, read from JSON, are kept in Extra and
// written back unchanged.
type Message struct {
	Role    Role      `json:"role"`
	Content []Content `json:"content"`

	// Assistant messages.
	Provider     string     `json:"provider,omitempty"`
	Model        string     `json:"model,omitempty"`
	API          string     `json:"api,omitempty"`
	Usage        *Usage     `json:"usage,omitempty"`
	StopReason   StopReason `json:"stopReason,omitempty"`
	ErrorMessage string     `json:"errorMessage,omitempty"`

	// Tool results.
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`

	// Timestamp is Unix milliseconds.
	Timestamp int64 `json:"timestamp"`

	// Extra holds fields unknown to this version, kept for round trips.
	Extra map[string]json.RawMessage `json:"-"`
}

// NowMillis is the current time in Unix milliseconds, the unit of Timestamp.
func NowMillis() int64 { return time.Now().UnixMilli() }

// UserText returns a user message holding one text block.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: []Content{Text(text)}, Timestamp: NowMillis()}
}

// Text concatenates the text blocks of the message.
func (m *Message) Text() string {
	var n int
	for i := range m.Content {
		if m.Content[i].Type == ContentText {
			n += len(m.Content[i].Text)
		}
	}
	b := make([]byte, 0, n)
	for i := range m.Content {
		if m.Content[i].Type == ContentText {
			b = append(b, m.Content[i].Text...)
		}
	}
	return string(b)
}

// ToolCalls returns the tool-call blocks of the message, in order.
func (m *Message) ToolCalls() []Content {
	var calls []Content
	for _, c := range m.Content {
		if c.Type == ContentToolCall {
			calls = append(calls, c)
		}
	}
	return calls
}

// Clone returns a copy whose content slice, usage and extras can be changed
// without touching m. Raw JSON values are shared: they are never mutated.
func (m *Message) Clone() Message {
	c := *m
	if m.Content != nil {
		c.Content = make([]Content, len(m.Content))
		copy(c.Content, m.Content)
	}
	if m.Usage != nil {
		u := *m.Usage
		c.Usage = &u
	}
	if m.Extra != nil {
		c.Extra = make(map[string]json.RawMessage, len(m.Extra))
		for k, v := range m.Extra {
			c.Extra[k] = v
		}
	}
	return c
}

type messageJSON Message

var messageFields = fieldSet(
	"role", "content", "provider", "model", "api", "usage", "stopReason", "errorMessage",
	"toolCallId", "toolName", "isError", "details", "timestamp")

// MarshalJSON writes the message with its unknown fields.
func (m Message) MarshalJSON() ([]byte, error) {
	if m.Content == nil {
		m.Content = []Content{}
	}
	b, err := MarshalJSON(messageJSON(m))
	if err != nil {
		return nil, err
	}
	return appendExtra(b, m.Extra)
}

// UnmarshalJSON reads a message. A user message whose content is a plain
// string (as pi writes it) becomes one text block.
func (m *Message) UnmarshalJSON(data []byte) error {
	var v struct {
		messageJSON
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	out := Message(v.messageJSON)
	switch c := bytes.TrimSpace(v.Content); {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return fmt.Errorf("message content: %w", err)
		}
		out.Content = []Content{Text(s)}
	default:
		if err := json.Unmarshal(c, &out.Content); err != nil {
			return fmt.Errorf("message content: %w", err)
		}
	}
	if hasUnknownKeys(data, messageFields) {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return err
		}
		out.Extra = extraFields(raw, messageFields)
	}
	*m = out
	return nil
}

// ContentType names the kind of a content block.
type ContentType string

// The content block kinds.
const (
	ContentText     ContentType = "text"
	ContentThinking ContentType = "thinking"
	ContentImage    ContentType = "image"
	ContentToolCall ContentType = "toolCall"
)

// Content is one block of a message: a tagged union whose Type says which
// fields are set.
//
//   - text: Text, and TextSignature (the OpenAI Responses message id);
//   - thinking: Thinking, ThinkingSignature, Redacted (the opaque payload is
//     then in ThinkingSignature);
//   - image: Data (base64) and MimeType;
//   - toolCall: ID, Name, Arguments (a JSON object) and ThoughtSignature
//     (Gemini's thought signature, or another provider's opaque token).
type Content struct {
	Type ContentType `json:"type"`

	Text          string `json:"text,omitempty"`
	TextSignature string `json:"textSignature,omitempty"`

	Thinking          string `json:"thinking,omitempty"`
	ThinkingSignature string `json:"thinkingSignature,omitempty"`
	Redacted          bool   `json:"redacted,omitempty"`

	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`

	ID               string          `json:"id,omitempty"`
	Name             string          `json:"name,omitempty"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	ThoughtSignature string          `json:"thoughtSignature,omitempty"`

	// Extra holds fields unknown to this version, kept for round trips.
	Extra map[string]json.RawMessage `json:"-"`
}

// Text returns a text block.
func Text(s string) Content { return Content{Type: ContentText, Text: s} }

// Thinking returns a thinking block.
func Thinking(s, signature string) Content {
	return Content{Type: ContentThinking, Thinking: s, ThinkingSignature: signature}
}

// Image returns an image block from base64 data.
func Image(base64Data, mimeType string) Content {
	return Content{Type: ContentImage, Data: base64Data, MimeType: mimeType}
}

// ToolCall returns a tool-call block. Empty arguments become {}.
func ToolCall(id, name string, args json.RawMessage) Content {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return Content{Type: ContentToolCall, ID: id, Name: name, Arguments: args}
}

type contentJSON Content

var contentFields = fieldSet(
	"type", "text", "textSignature", "thinking", "thinkingSignature", "redacted",
	"data", "mimeType", "id", "name", "arguments", "thoughtSignature")

// MarshalJSON writes the block with its unknown fields. A text block always
// has its text field and a tool call its arguments, even when empty.
func (c Content) MarshalJSON() ([]byte, error) {
	b, err := MarshalJSON(contentJSON(c))
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case ContentText:
		if c.Text == "" {
			b = insertField(b, `"text":""`)
		}
	case ContentThinking:
		if c.Thinking == "" {
			b = insertField(b, `"thinking":""`)
		}
	case ContentToolCall:
		if len(c.Arguments) == 0 {
			b = insertField(b, `"arguments":{}`)
		}
	}
	return appendExtra(b, c.Extra)
}

// UnmarshalJSON reads a block, keeping unknown fields in Extra.
func (c *Content) UnmarshalJSON(data []byte) error {
	var v contentJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if hasUnknownKeys(data, contentFields) {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return err
		}
		v.Extra = extraFields(raw, contentFields)
	}
	*c = Content(v)
	return nil
}

func fieldSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func extraFields(raw map[string]json.RawMessage, known map[string]bool) map[string]json.RawMessage {
	var extra map[string]json.RawMessage
	for k, v := range raw {
		if known[k] {
			continue
		}
		if extra == nil {
			extra = make(map[string]json.RawMessage)
		}
		extra[k] = v
	}
	return extra
}

// hasUnknownKeys reports whether the top-level object has a key outside
// known, without decoding the values.
func hasUnknownKeys(data []byte, known map[string]bool) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := t.(string)
		if !known[key] {
			return true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}

// appendExtra splices extra fields, in sorted key order, into the JSON
// object b.
func appendExtra(b []byte, extra map[string]json.RawMessage) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	e, err := MarshalJSON(extra) // map keys are sorted
	if err != nil {
		return nil, fmt.Errorf("encode extra fields: %w", err)
	}
	if len(e) <= 2 {
		return b, nil
	}
	out := make([]byte, 0, len(b)+len(e))
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, e[1:]...)
	return out, nil
}

// insertField adds a raw "key":value pair at the end of the JSON object b.
func insertField(b []byte, field string) []byte {
	out := make([]byte, 0, len(b)+len(field)+1)
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, field...)
	return append(out, '}')
}
