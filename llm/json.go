package llm

import (
	"bytes"
	"encoding/json"
)

// MarshalJSON encodes v as json.Marshal does, except that <, > and & are
// written as they are rather than as \u003c, \u003e and \u0026, as
// JavaScript's JSON.stringify writes them. Every JSON line agentloop writes
// (events, transcripts) goes through it, so code and markup in messages stay
// readable, and pi's tools read our transcripts byte for byte as they would
// their own.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode ends the value with a newline
}
