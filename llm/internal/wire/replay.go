package wire

import (
	"bytes"
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
)

// Dropped reports whether an assistant message stays out of a request: it
// failed and made no tool calls, so nothing in it is owed a result or is
// worth sending again.
func Dropped(msg *llm.Message) bool {
	if !msg.StopReason.Failed() {
		return false
	}
	for i := range msg.Content {
		if msg.Content[i].Type == llm.ContentToolCall {
			return false
		}
	}
	return true
}

// Made reports whether msg came from the site's model over api, so what
// only that model can read (signatures, opaque reasoning) may go back to
// it.
func (s *Site) Made(msg *llm.Message, api llm.API) bool {
	return msg.API == string(api) && msg.Provider == s.Provider && msg.Model == s.Model
}

// ObjectArgs returns a tool call's arguments for a provider that takes
// only an object: as they are when they hold one, else {}.
func ObjectArgs(args json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(args); len(t) == 0 || t[0] != '{' {
		return json.RawMessage("{}")
	}
	return args
}
