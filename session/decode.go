package session

import (
	"bytes"
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
)

// The loader's fast path. llm.Message and llm.Content keep unknown fields
// for round trips, which costs them a second pass over every object. Our
// own files have no unknown fields, so each line is first decoded into
// plain mirrors of those types with unknown fields disallowed; only a line
// that fails that (a field from a newer version or another tool, a content
// string) goes through the preserving decoders.

// fastContent has llm.Content's fields and no methods, so one converts to
// the other.
type fastContent struct {
	Type              llm.ContentType            `json:"type"`
	Text              string                     `json:"text,omitempty"`
	TextSignature     string                     `json:"textSignature,omitempty"`
	Thinking          string                     `json:"thinking,omitempty"`
	ThinkingSignature string                     `json:"thinkingSignature,omitempty"`
	Redacted          bool                       `json:"redacted,omitempty"`
	Data              string                     `json:"data,omitempty"`
	MimeType          string                     `json:"mimeType,omitempty"`
	ID                string                     `json:"id,omitempty"`
	Name              string                     `json:"name,omitempty"`
	Arguments         json.RawMessage            `json:"arguments,omitempty"`
	ThoughtSignature  string                     `json:"thoughtSignature,omitempty"`
	Extra             map[string]json.RawMessage `json:"-"`
}

type fastMessage struct {
	Role         llm.Role        `json:"role"`
	Content      []fastContent   `json:"content"`
	Provider     string          `json:"provider,omitempty"`
	Model        string          `json:"model,omitempty"`
	API          string          `json:"api,omitempty"`
	Usage        *llm.Usage      `json:"usage,omitempty"`
	StopReason   llm.StopReason  `json:"stopReason,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	ToolCallID   string          `json:"toolCallId,omitempty"`
	ToolName     string          `json:"toolName,omitempty"`
	IsError      bool            `json:"isError,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
	Timestamp    int64           `json:"timestamp"`
}

type fastEntry struct {
	entryJSON
	Message *fastMessage `json:"message,omitempty"`
}

// decodeEntry decodes one line, through the fast path when it can.
func decodeEntry(line []byte) (Entry, error) {
	var f fastEntry
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if dec.Decode(&f) != nil || dec.More() || (len(f.Content) > 0 && f.Content[0] != '[') {
		var e Entry
		err := json.Unmarshal(line, &e)
		return e, err
	}
	var e Entry
	e.fromJSON(&f.entryJSON)
	if len(f.Content) > 0 && string(f.Content) != "null" {
		c, err := decodeContent(f.Content)
		if err != nil {
			return Entry{}, err
		}
		e.Content = c
	}
	if fm := f.Message; fm != nil {
		m := &llm.Message{
			Role: fm.Role, Provider: fm.Provider, Model: fm.Model, API: fm.API, Usage: fm.Usage,
			StopReason: fm.StopReason, ErrorMessage: fm.ErrorMessage, ToolCallID: fm.ToolCallID,
			ToolName: fm.ToolName, IsError: fm.IsError, Details: fm.Details, Timestamp: fm.Timestamp,
		}
		if fm.Content != nil {
			m.Content = make([]llm.Content, len(fm.Content))
			for i := range fm.Content {
				m.Content[i] = llm.Content(fm.Content[i])
			}
		}
		e.Message = m
	}
	return e, nil
}
