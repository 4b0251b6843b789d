package harness

import (
	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// EmitMessage sends a whole native message as the events the built-in
// loop sends for one: message_start, its text as one text delta (what a
// printer shows), message_end. Engines that do not stream token by token
// report each message this way.
func EmitMessage(emit func(agent.Event), msg llm.Message) {
	if emit == nil {
		return
	}
	emit(agent.Event{Type: agent.EventMessageStart, Message: &msg})
	if msg.Role == llm.RoleAssistant {
		if t := msg.Text(); t != "" {
			emit(agent.Event{Type: agent.EventMessageUpdate, Message: &msg, LLM: &llm.Event{Type: llm.EventTextDelta, Delta: t}})
		}
	}
	emit(agent.Event{Type: agent.EventMessageEnd, Message: &msg})
}
