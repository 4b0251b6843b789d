package session

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/agentloop/agentloop/llm"
)

// The loader's fast path. llm.Message and llm.Content keep unknown fields
// for round trips, which costs them a second pass over every object. Our
// own files have no unknown fields, so each line is first decoded into
// plain mirrors of those types with unknown fields disallowed; only a line
// that fails that (a field from a newer version or another tool, a message
// content given as a string) goes through the preserving decoders.

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

// lineDecoder decodes the entry lines of one buffer through one
// json.Decoder, so that lines share its buffer instead of each allocating
// their own. It falls back to decoding a line alone, with the preserving
// decoders, whenever the fast path fails.
type lineDecoder struct {
	data []byte        // whole lines
	dec  *json.Decoder // nil when it must restart at the next line
	base int           // the offset in data where dec started
}

// decode decodes the line data[start:end] (end is its newline).
func (ld *lineDecoder) decode(start, end int) (Entry, error) {
	if ld.dec == nil {
		ld.dec = json.NewDecoder(bytes.NewReader(ld.data[start:]))
		ld.dec.DisallowUnknownFields()
		ld.base = start
	}
	var f fastEntry
	err := ld.dec.Decode(&f)
	if err == nil {
		// The decoder skipped only whitespace to reach this line; the value
		// must also end on it.
		after := ld.base + int(ld.dec.InputOffset())
		if after > end || len(bytes.TrimSpace(ld.data[after:end])) != 0 {
			err = errSpansLines
		}
	}
	if err != nil {
		ld.dec = nil
		var e Entry
		err := json.Unmarshal(ld.data[start:end], &e)
		return e, err
	}
	return f.entry()
}

var errSpansLines = errors.New("an entry must be one line")

// decodeEntry decodes one line, through the fast path when it can.
func decodeEntry(line []byte) (Entry, error) {
	ld := lineDecoder{data: line}
	return ld.decode(0, len(line))
}

func (f *fastEntry) entry() (Entry, error) {
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
