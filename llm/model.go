package llm

import (
	"context"
	"encoding/json"
	"iter"
)

// Model streams one assistant reply. It is the one interface every wire
// package implements.
//
// Stream's contract:
//   - a failure before the first event is yielded once as (Event{}, err),
//     with err a *ProviderError where the failure came from the provider;
//   - after the first event every failure arrives as a final EventError whose
//     Message has StopReason error or aborted, keeps the content streamed so
//     far, and whose Err holds the *ProviderError (or context error);
//   - a successful stream ends with one EventDone;
//   - a consumer's break, or a cancelled ctx, stops the producer and releases
//     what it holds (HTTP bodies, goroutines) before Stream's iterator returns.
type Model interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Event, error]
}

// ModelFunc adapts a function to the Model interface.
type ModelFunc func(ctx context.Context, req *Request) iter.Seq2[Event, error]

// Stream calls f.
func (f ModelFunc) Stream(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	return f(ctx, req)
}

// Request is everything a model call sends.
type Request struct {
	SystemPrompt string     `json:"systemPrompt,omitempty"`
	Messages     []Message  `json:"messages"`
	Tools        []ToolSpec `json:"tools,omitempty"`
	Options      Options    `json:"options"`
}

// ToolSpec describes a tool to the model: its name, what it does, and the
// JSON schema of its parameters.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Options tune one call. Zero values mean the model's defaults.
type Options struct {
	// MaxTokens caps the output; 0 lets the wire package choose.
	MaxTokens int `json:"maxTokens,omitempty"`
	// Temperature, when set, is sent as is.
	Temperature *float64 `json:"temperature,omitempty"`
	// Thinking is the reasoning effort; "" and ThinkingOff disable it.
	Thinking ThinkingLevel `json:"thinking,omitempty"`
	// ToolChoice is "auto" (or ""), "none", "required", or a tool name.
	ToolChoice string `json:"toolChoice,omitempty"`
	// SessionID keys the provider's prompt cache where it has one.
	SessionID string `json:"sessionId,omitempty"`
}

// ThinkingLevel is a provider-neutral reasoning effort.
type ThinkingLevel string

// The thinking levels, lowest first.
const (
	ThinkingOff     ThinkingLevel = "off"
	ThinkingMinimal ThinkingLevel = "minimal"
	ThinkingLow     ThinkingLevel = "low"
	ThinkingMedium  ThinkingLevel = "medium"
	ThinkingHigh    ThinkingLevel = "high"
	ThinkingXHigh   ThinkingLevel = "xhigh"
)

// ThinkingLevels lists the levels from off to xhigh.
var ThinkingLevels = []ThinkingLevel{ThinkingOff, ThinkingMinimal, ThinkingLow, ThinkingMedium, ThinkingHigh, ThinkingXHigh}

// Enabled reports whether the level asks for reasoning.
func (l ThinkingLevel) Enabled() bool { return l != "" && l != ThinkingOff }

// ParseThinkingLevel checks a level name.
func ParseThinkingLevel(s string) (ThinkingLevel, bool) {
	for _, l := range ThinkingLevels {
		if string(l) == s {
			return l, true
		}
	}
	return "", false
}
