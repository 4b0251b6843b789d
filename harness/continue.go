package harness

import "github.com/agentloop/agentloop/llm"

// Continuation is what a retry after a transient failure carries: the
// original prompt and the completed messages and tool results of the
// failed attempt, so the engine continues without running those tools
// again.
type Continuation struct {
	Prompt    llm.Message
	Completed []llm.Message
}

// NewContinuation keeps, from the failed attempt's messages, every
// complete assistant message whose tool calls all have results, with
// those results; it stops at the first failed or unanswered one.
func NewContinuation(prompt llm.Message, attempt []llm.Message) *Continuation {
	c := &Continuation{Prompt: prompt}
	for i := 0; i < len(attempt); {
		m := attempt[i]
		if m.Role != llm.RoleAssistant || m.StopReason.Failed() {
			break
		}
		calls := m.ToolCalls()
		j := i + 1
		answered := map[string]bool{}
		for j < len(attempt) && attempt[j].Role == llm.RoleToolResult {
			answered[attempt[j].ToolCallID] = true
			j++
		}
		for _, tc := range calls {
			if !answered[tc.ID] {
				return c
			}
		}
		c.Completed = append(c.Completed, attempt[i:j]...)
		i = j
	}
	return c
}

// Messages returns the prompt and the completed messages, the history a
// retried attempt continues from.
func (c *Continuation) Messages() []llm.Message {
	return append([]llm.Message{c.Prompt}, c.Completed...)
}
