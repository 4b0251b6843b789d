package agent

import (
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// EventType names an agent event. It is an open set: the runner, compaction
// and other layers emit their own types (retry, auto_compaction_start, ...)
// through the same Event, with their payload in Data.
type EventType string

// The events of the loop, in the order of one run: agent_start; per turn
// turn_start, the injected messages' message_start/message_end, the
// assistant's message_start, message_update..., message_end, per tool call
// tool_execution_start, tool_execution_update..., tool_execution_end, the
// tool results' message_start/message_end, turn_end; finally agent_end.
// hook_error may appear anywhere.
const (
	EventAgentStart          EventType = "agent_start"
	EventTurnStart           EventType = "turn_start"
	EventMessageStart        EventType = "message_start"
	EventMessageUpdate       EventType = "message_update"
	EventMessageEnd          EventType = "message_end"
	EventToolExecutionStart  EventType = "tool_execution_start"
	EventToolExecutionUpdate EventType = "tool_execution_update"
	EventToolExecutionEnd    EventType = "tool_execution_end"
	EventTurnEnd             EventType = "turn_end"
	EventAgentEnd            EventType = "agent_end"
	EventHookError           EventType = "hook_error"
)

// Why a run ended, in agent_end's Reason.
const (
	ReasonStop     = "stop"      // the model answered without calling a tool
	ReasonMaxTurns = "max_turns" // the turn limit was reached
	ReasonAborted  = "aborted"   // the context was cancelled
	ReasonError    = "error"     // the model call failed
)

// Event is one step of a run. Which fields are set depends on Type:
//
//   - message_start, message_end: Message (the whole message; on
//     message_start of an assistant message, the empty partial);
//   - message_update: LLM, the streaming event; it and its Partial (the
//     message so far) are valid only during the handler: copy what you keep;
//   - tool_execution_start: ToolCallID, ToolName, Args;
//   - tool_execution_update: ToolCallID, ToolName, Partial;
//   - tool_execution_end: ToolCallID, ToolName, Result;
//   - turn_end: Message (the assistant message), ToolResults, StopReason;
//   - agent_end: StopReason, Reason, Usage (summed over the run), Err (for
//     error and aborted), Messages (the messages the run added);
//   - hook_error: Hook, Err.
//
// Turn numbers the model calls of the run from 1 (0 outside a turn).
type Event struct {
	Type EventType
	Turn int

	Message *llm.Message
	LLM     *llm.Event

	ToolCallID string
	ToolName   string
	Args       json.RawMessage
	Partial    *tool.Partial
	Result     *tool.Result

	ToolResults []llm.Message
	StopReason  llm.StopReason
	Reason      string
	Usage       *llm.Usage
	Messages    []llm.Message

	Hook string
	Err  error

	// Data is the payload of event types other packages add.
	Data json.RawMessage
}

type wireResult struct {
	Content []llm.Content   `json:"content"`
	Details json.RawMessage `json:"details,omitempty"`
}

type wirePartial struct {
	Content []llm.Content   `json:"content,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

type wireEvent struct {
	V          int             `json:"v"`
	Type       EventType       `json:"type"`
	Turn       int             `json:"turn,omitempty"`
	Message    *llm.Message    `json:"message,omitempty"`
	Event      llm.EventType   `json:"event,omitempty"`
	Index      *int            `json:"contentIndex,omitempty"`
	Delta      string          `json:"delta,omitempty"`
	Block      *llm.Content    `json:"block,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Partial    *wirePartial    `json:"partial,omitempty"`
	Result     *wireResult     `json:"result,omitempty"`
	IsError    *bool           `json:"isError,omitempty"`
	StopReason llm.StopReason  `json:"stopReason,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Usage      *llm.Usage      `json:"usage,omitempty"`
	Hook       string          `json:"hook,omitempty"`
	Error      string          `json:"error,omitempty"`
	Failure    llm.Reason      `json:"failure,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// MarshalJSON writes the event as one line of the protocol of
// docs/protocol.md: "v":1, the type, and only what the event adds. A
// message_update carries only its delta (a finished tool call also its
// block), never the partial message, so a run's encoding grows linearly;
// turn_end and agent_end do not repeat messages already sent by
// message_end.
func (e Event) MarshalJSON() ([]byte, error) {
	w := wireEvent{
		V: llm.ProtocolVersion, Type: e.Type, Turn: e.Turn,
		ToolCallID: e.ToolCallID, ToolName: e.ToolName, StopReason: e.StopReason,
		Reason: e.Reason, Usage: e.Usage, Hook: e.Hook, Data: e.Data,
	}
	switch e.Type {
	case EventMessageStart, EventMessageEnd:
		w.Message = e.Message
	case EventMessageUpdate:
		if ev := e.LLM; ev != nil {
			w.Event = ev.Type
			if ev.Type != llm.EventStart && !ev.Type.Terminal() {
				idx := ev.ContentIndex
				w.Index = &idx
			}
			w.Delta = ev.Delta
			if ev.Type == llm.EventToolCallStart && ev.Partial != nil && ev.ContentIndex < len(ev.Partial.Content) {
				b := &ev.Partial.Content[ev.ContentIndex]
				w.ToolCallID, w.ToolName = b.ID, b.Name
			}
			if ev.Type == llm.EventToolCallEnd {
				w.Block = ev.Block
			}
		}
	case EventToolExecutionStart:
		w.Args = e.Args
	case EventToolExecutionUpdate:
		if e.Partial != nil {
			w.Partial = &wirePartial{Content: e.Partial.Content, Details: e.Partial.Details}
		}
	case EventToolExecutionEnd:
		if r := e.Result; r != nil {
			content := r.Content
			if content == nil {
				content = []llm.Content{}
			}
			w.Result = &wireResult{Content: content, Details: r.Details}
			isErr := r.IsError
			w.IsError = &isErr
		}
	default:
		w.Message = e.Message
		w.Args = e.Args
		if r := e.Result; r != nil {
			w.Result = &wireResult{Content: r.Content, Details: r.Details}
			isErr := r.IsError
			w.IsError = &isErr
		}
	}
	if e.Type == EventTurnEnd || e.Type == EventAgentEnd {
		w.Message = nil
	}
	if e.Err != nil {
		w.Error = e.Err.Error()
		w.Failure = llm.ReasonOf(e.Err)
	}
	return llm.MarshalJSON(w)
}
