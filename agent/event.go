package agent

import (
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// EventType names an event. It is an open set: the runner, compaction and
// other layers name their own events (retry, auto_compaction_start, ...)
// with it.
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
//   - hook_error: Hook, Err;
//   - retry_reset: Message (the withdrawn reply), Usage, Reason, MaxTokens;
//   - stop_continuation: Reason, Count, Max.
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

	// MaxTokens is the raised output limit, on retry_reset; Count and Max
	// count a stop-chain continuation and its bound, on stop_continuation.
	MaxTokens  int
	Count, Max int
}
