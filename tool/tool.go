package tool

import (
	"context"
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
)

// Tool is something the model can call.
type Tool interface {
	// Name is the name the model calls the tool by.
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Schema is the JSON schema of the arguments object.
	Schema() json.RawMessage
	// Execute runs one call. Its arguments have been validated and coerced
	// against Schema. update, never nil, reports progress; it may be called
	// from any goroutine until Execute returns. A returned error becomes an
	// isError result carrying its text; a cancelled ctx becomes an
	// "aborted" result.
	Execute(ctx context.Context, call Call, update func(Partial)) (Result, error)
}

// ConcurrencyClassifier is implemented by tools that can tell, per call,
// whether that call may run concurrently with others. A tool that does not
// implement it is exclusive: its calls run alone.
type ConcurrencyClassifier interface {
	ConcurrencySafe(call Call) bool
}

// Call is one validated call of a tool.
type Call struct {
	// ID is the provider's id of the call.
	ID string
	// Name is the tool's name.
	Name string
	// Args are the validated, coerced arguments: a JSON object.
	Args json.RawMessage
}

// Result is what a call returns to the model.
type Result struct {
	Content []llm.Content
	// Details is metadata for people and logs; it is never sent to a model.
	Details json.RawMessage
	IsError bool
}

// Partial is a progress report of a running call.
type Partial struct {
	Content []llm.Content
	Details json.RawMessage
}

// TextResult returns a result of one text block.
func TextResult(text string) Result {
	return Result{Content: []llm.Content{llm.Text(text)}}
}

// ErrorResult returns an isError result of one text block.
func ErrorResult(text string) Result {
	return Result{Content: []llm.Content{llm.Text(text)}, IsError: true}
}

// Message turns the result into the toolResult message that answers call.
func (r Result) Message(callID, toolName string) llm.Message {
	content := r.Content
	if content == nil {
		content = []llm.Content{}
	}
	return llm.Message{
		Role:       llm.RoleToolResult,
		ToolCallID: callID,
		ToolName:   toolName,
		Content:    content,
		Details:    r.Details,
		IsError:    r.IsError,
		Timestamp:  llm.NowMillis(),
	}
}

// Text concatenates the text blocks of the result.
func (r Result) Text() string {
	m := llm.Message{Content: r.Content}
	return m.Text()
}

// Func is a Tool built from a function, for tools small enough not to need
// a type of their own.
type Func struct {
	ToolName        string
	ToolDescription string
	// Parameters is the JSON schema of the arguments; nil means an object
	// with no properties.
	Parameters json.RawMessage
	// Concurrent marks every call of the tool as safe to run beside others.
	Concurrent bool
	Run        func(ctx context.Context, call Call, update func(Partial)) (Result, error)
}

// Name returns ToolName.
func (f *Func) Name() string { return f.ToolName }

// Description returns ToolDescription.
func (f *Func) Description() string { return f.ToolDescription }

// Schema returns Parameters, or an empty object schema.
func (f *Func) Schema() json.RawMessage {
	if len(f.Parameters) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return f.Parameters
}

// Execute calls Run.
func (f *Func) Execute(ctx context.Context, call Call, update func(Partial)) (Result, error) {
	return f.Run(ctx, call, update)
}

// ConcurrencySafe returns Concurrent.
func (f *Func) ConcurrencySafe(Call) bool { return f.Concurrent }
