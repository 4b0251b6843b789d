package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
)

func TestDropped(t *testing.T) {
	call := llm.Content{Type: llm.ContentToolCall, ID: "c1", Name: "read"}
	text := llm.Content{Type: llm.ContentText, Text: "half"}
	tests := []struct {
		name string
		msg  llm.Message
		want bool
	}{
		{"failed without calls", llm.Message{StopReason: llm.StopReasonError, Content: []llm.Content{text}}, true},
		{"aborted empty", llm.Message{StopReason: llm.StopReasonAborted}, true},
		{"failed with a call", llm.Message{StopReason: llm.StopReasonError, Content: []llm.Content{text, call}}, false},
		{"finished", llm.Message{StopReason: llm.StopReasonStop, Content: []llm.Content{text}}, false},
	}
	for _, tt := range tests {
		if got := wire.Dropped(&tt.msg); got != tt.want {
			t.Errorf("%s: Dropped %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMade(t *testing.T) {
	s := wire.Site{Provider: "acme", Model: "m1"}
	tests := []struct {
		msg  llm.Message
		want bool
	}{
		{llm.Message{API: string(llm.APIAnthropicMessages), Provider: "acme", Model: "m1"}, true},
		{llm.Message{API: string(llm.APIOpenAIResponses), Provider: "acme", Model: "m1"}, false},
		{llm.Message{API: string(llm.APIAnthropicMessages), Provider: "other", Model: "m1"}, false},
		{llm.Message{API: string(llm.APIAnthropicMessages), Provider: "acme", Model: "m2"}, false},
	}
	for _, tt := range tests {
		if got := s.Made(&tt.msg, llm.APIAnthropicMessages); got != tt.want {
			t.Errorf("Made(%s %s %s) = %v, want %v", tt.msg.API, tt.msg.Provider, tt.msg.Model, got, tt.want)
		}
	}
}

func TestObjectArgs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"n":1}`, `{"n":1}`},
		{` {"n":1}`, ` {"n":1}`},
		{``, `{}`},
		{`   `, `{}`},
		{`[1]`, `{}`},
		{`"text"`, `{}`},
		{`null`, `{}`},
	} {
		if got := string(wire.ObjectArgs(json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("ObjectArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
