package faux

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Step is one scripted reply: what the model answers to one Stream call.
//
// A step with Func set is dynamic: Func is called with the request and the
// step it returns is played (its own Func is ignored). Otherwise the canned
// fields are played: Content is streamed block by block, then the reply ends
// with StopReason, or fails with Err.
type Step struct {
	// Content holds the blocks to stream: text, thinking and tool calls.
	// A tool call's Arguments are streamed as they are; arguments that are
	// not valid JSON (see RawToolCall) reach the consumer as a JSON string,
	// the convention for a call whose arguments were cut off.
	Content []llm.Content
	// StopReason ends a successful reply. Empty means toolUse when Content
	// has a tool call and stop otherwise.
	StopReason llm.StopReason
	// Err, when set, fails the reply after Content has been streamed.
	Err *Failure
	// Delay is waited before every chunk (honouring cancellation).
	Delay time.Duration
	// Tail is waited after the last block, before the terminal event: the
	// model keeps the message open after its tool calls.
	Tail time.Duration
	// Hold, when set, is waited on before the terminal event, after Tail:
	// tests use it to keep a stream open until they say so.
	Hold <-chan struct{}
	// Usage, when set, replaces the estimated usage.
	Usage *llm.Usage
	// Func makes the step dynamic.
	Func func(ctx context.Context, req *llm.Request) Step
}

// Failure describes a provider failure the step reports.
type Failure struct {
	Reason  llm.Reason
	Status  int
	Message string
	// RetryAfter is the wait the simulated provider asks for.
	RetryAfter time.Duration
	// BeforeStart fails the call before the first event, as a refused HTTP
	// request does: the stream yields (Event{}, err) once.
	BeforeStart bool
}

func (f *Failure) providerError(info *llm.ModelInfo) *llm.ProviderError {
	msg := f.Message
	if msg == "" {
		msg = fmt.Sprintf("simulated %s failure", f.Reason)
	}
	reason := f.Reason
	if reason == "" {
		reason = llm.ReasonUnknown
	}
	return &llm.ProviderError{
		Provider: info.Provider, Model: info.ID, Status: f.Status, Reason: reason,
		RetryAfter: f.RetryAfter, Message: msg,
	}
}

// Reply returns a canned step that streams blocks. The stop reason follows
// from the blocks (toolUse if one is a tool call, else stop).
func Reply(blocks ...llm.Content) Step { return Step{Content: blocks} }

// Say returns a step answering with one text block.
func Say(text string) Step { return Reply(Text(text)) }

// Call returns a step that calls one tool with args (marshalled to JSON),
// after an optional text block.
func Call(text, name string, args any) Step {
	var blocks []llm.Content
	if text != "" {
		blocks = append(blocks, Text(text))
	}
	return Reply(append(blocks, ToolCall(name, args))...)
}

// Fail returns a step whose reply fails with a provider error of the given
// reason after the first event (an error event with StopReason error).
func Fail(reason llm.Reason, message string) Step {
	return Step{Err: &Failure{Reason: reason, Message: message}}
}

// Refuse returns a step that fails before the first event, as an HTTP error
// response does.
func Refuse(reason llm.Reason, status int, message string) Step {
	return Step{Err: &Failure{Reason: reason, Status: status, Message: message, BeforeStart: true}}
}

// Func returns a dynamic step: f is called with the request of the call.
func Func(f func(ctx context.Context, req *llm.Request) Step) Step { return Step{Func: f} }

// WithStop returns s with stop reason r.
func (s Step) WithStop(r llm.StopReason) Step { s.StopReason = r; return s }

// WithDelay returns s waiting d before every chunk.
func (s Step) WithDelay(d time.Duration) Step { s.Delay = d; return s }

// WithTail returns s keeping the stream open for d after its last block.
func (s Step) WithTail(d time.Duration) Step { s.Tail = d; return s }

// WithHold returns s waiting for ch to be closed (or to deliver) before its
// terminal event.
func (s Step) WithHold(ch <-chan struct{}) Step { s.Hold = ch; return s }

// WithError returns s failing with f after its blocks.
func (s Step) WithError(f Failure) Step { s.Err = &f; return s }

// Text returns a text block.
func Text(s string) llm.Content { return llm.Text(s) }

// Thinking returns a thinking block.
func Thinking(s string) llm.Content { return llm.Thinking(s, "") }

// ToolCall returns a tool-call block calling name with args. args may be a
// json.RawMessage, a []byte or string of JSON, or any value to marshal. The
// id is assigned when the step is played unless set with ToolCallID.
func ToolCall(name string, args any) llm.Content {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
		raw = json.RawMessage("{}")
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	case string:
		raw = json.RawMessage(a)
	default:
		b, err := llm.MarshalJSON(a)
		if err != nil {
			panic(fmt.Sprintf("faux.ToolCall(%q): arguments do not marshal: %v", name, err))
		}
		raw = b
	}
	return llm.Content{Type: llm.ContentToolCall, Name: name, Arguments: raw}
}

// RawToolCall returns a tool-call block whose arguments are streamed as the
// given text, valid JSON or not: a call cut off mid-arguments.
func RawToolCall(name, raw string) llm.Content {
	return llm.Content{Type: llm.ContentToolCall, Name: name, Arguments: json.RawMessage(raw)}
}

// ToolCallID returns a tool-call block with an explicit id.
func ToolCallID(id, name string, args any) llm.Content {
	c := ToolCall(name, args)
	c.ID = id
	return c
}
