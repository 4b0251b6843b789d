package session

import (
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
)

// OmittedCallsText replaces the content of an assistant message whose tool
// calls all had to be removed, so the turn is not empty.
const OmittedCallsText = "[tool calls omitted]"

// resultIDKeys are the fields a tool-result content block may carry its
// call id in, across the formats histories are imported from.
var resultIDKeys = []string{"toolUseId", "toolCallId", "tool_use_id", "tool_call_id", "callId", "call_id"}

// ValidateAnthropicTurns shapes a history for the Anthropic Messages API:
//
//  1. Tool calls with no result before the next assistant message are
//     removed (Anthropic rejects a tool_use without its tool_result). If
//     nothing is left the content becomes OmittedCallsText, or empty for a
//     failed turn. A message with thinking blocks is all or nothing: its
//     signature covers the whole turn, so it is kept unchanged only when
//     every call has a result of the same tool name, and otherwise
//     replaced as above.
//  2. Consecutive user messages are merged into one (see MergeUserTurns), so
//     turns alternate; no content is lost.
//
// It is idempotent.
func ValidateAnthropicTurns(msgs []llm.Message) []llm.Message {
	if anthropicValid(msgs) {
		return msgs
	}
	out := make([]llm.Message, 0, len(msgs))
	for i := range msgs {
		m := msgs[i]
		if m.Role == llm.RoleAssistant {
			m = stripDanglingCalls(msgs, i)
		}
		if n := len(out); n > 0 && m.Role == llm.RoleUser && out[n-1].Role == llm.RoleUser {
			out[n-1] = MergeUserTurns(out[n-1], m)
			continue
		}
		out = append(out, m)
	}
	return out
}

// anthropicValid reports whether ValidateAnthropicTurns has nothing to
// do: no consecutive user messages, and every call answered by a result of
// its name before the next assistant message.
func anthropicValid(msgs []llm.Message) bool {
	for i := range msgs {
		m := &msgs[i]
		if m.Role == llm.RoleUser && i > 0 && msgs[i-1].Role == llm.RoleUser {
			return false
		}
		if m.Role != llm.RoleAssistant {
			continue
		}
		for k := range m.Content {
			c := &m.Content[k]
			if c.Type != llm.ContentToolCall {
				continue
			}
			answered := false
			for j := i + 1; j < len(msgs) && msgs[j].Role != llm.RoleAssistant; j++ {
				if r := &msgs[j]; r.Role == llm.RoleToolResult && r.ToolCallID == c.ID && r.ToolName == c.Name {
					answered = true
					break
				}
			}
			if !answered {
				return false
			}
		}
	}
	return true
}

// stripDanglingCalls returns msgs[i] without the calls that have no result
// before the next assistant message.
func stripDanglingCalls(msgs []llm.Message, i int) llm.Message {
	m := msgs[i]
	calls := m.ToolCalls()
	if len(calls) == 0 {
		return m
	}
	results := map[string]string{} // id → tool name ("" when unknown)
	for j := i + 1; j < len(msgs) && msgs[j].Role != llm.RoleAssistant; j++ {
		r := &msgs[j]
		if r.Role == llm.RoleToolResult {
			results[r.ToolCallID] = r.ToolName
			continue
		}
		for _, c := range r.Content {
			if c.Type != "toolResult" && c.Type != "tool_result" && c.Type != "tool" {
				continue
			}
			for _, k := range resultIDKeys {
				var id string
				if raw, ok := c.Extra[k]; ok && json.Unmarshal(raw, &id) == nil && id != "" {
					results[id] = ""
				}
			}
		}
	}
	thinking := false
	for _, c := range m.Content {
		if c.Type == llm.ContentThinking || c.Type == "redacted_thinking" {
			thinking = true
		}
	}
	fallback := []llm.Content{llm.Text(OmittedCallsText)}
	if m.StopReason.Failed() {
		fallback = []llm.Content{}
	}
	if thinking {
		for _, c := range calls {
			name, ok := results[c.ID]
			if !ok || name != "" && name != c.Name {
				m.Content = fallback
				return m
			}
		}
		return m
	}
	kept := make([]llm.Content, 0, len(m.Content))
	for _, c := range m.Content {
		if c.Type == llm.ContentToolCall {
			if _, ok := results[c.ID]; !ok {
				continue
			}
		}
		kept = append(kept, c)
	}
	if len(kept) == len(m.Content) {
		return m
	}
	if len(kept) == 0 {
		kept = fallback
	}
	m.Content = kept
	return m
}

// MergeUserTurns merges two consecutive user messages: the content of both
// in order, the later message's fields (and its unknown fields) winning,
// and the earlier timestamp when the later one has none.
func MergeUserTurns(prev, cur llm.Message) llm.Message {
	out := cur.Clone()
	out.Content = make([]llm.Content, 0, len(prev.Content)+len(cur.Content))
	out.Content = append(append(out.Content, prev.Content...), cur.Content...)
	if out.Timestamp == 0 {
		out.Timestamp = prev.Timestamp
	}
	if len(prev.Extra) > 0 {
		extra := make(map[string]json.RawMessage, len(prev.Extra)+len(cur.Extra))
		for k, v := range prev.Extra {
			extra[k] = v
		}
		for k, v := range cur.Extra {
			extra[k] = v
		}
		out.Extra = extra
	}
	return out
}

// ValidateGeminiTurns shapes a history for Gemini, which wants each model
// turn whole: consecutive assistant messages are merged into one, so the
// function calls of a turn sit in one model turn and (after RepairPairing)
// their responses follow it directly. The merged message keeps the earlier
// message's fields, the content of both, and the later message's usage,
// stop reason and error when it has them.
func ValidateGeminiTurns(msgs []llm.Message) []llm.Message {
	merge := false
	for i := 1; i < len(msgs) && !merge; i++ {
		merge = msgs[i].Role == llm.RoleAssistant && msgs[i-1].Role == llm.RoleAssistant
	}
	if !merge {
		return msgs
	}
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		n := len(out)
		if n == 0 || m.Role != llm.RoleAssistant || out[n-1].Role != llm.RoleAssistant {
			out = append(out, m)
			continue
		}
		prev := out[n-1].Clone()
		prev.Content = append(prev.Content, m.Content...)
		if m.Usage != nil {
			u := *m.Usage
			prev.Usage = &u
		}
		if m.StopReason != "" {
			prev.StopReason = m.StopReason
		}
		if m.ErrorMessage != "" {
			prev.ErrorMessage = m.ErrorMessage
		}
		out[n-1] = prev
	}
	return out
}

// LimitHistoryTurns keeps the last n user turns: everything before the
// n-th user message from the end is dropped. n <= 0 keeps everything. The
// cut can leave results without their call, so run RepairPairing after it
// (Repair does).
func LimitHistoryTurns(msgs []llm.Message, n int) []llm.Message {
	if n <= 0 || len(msgs) == 0 {
		return msgs
	}
	count, start := 0, len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != llm.RoleUser {
			continue
		}
		if count++; count > n {
			return msgs[start:]
		}
		start = i
	}
	return msgs
}
