package compact

import (
	"encoding/json"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

func user(text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}}
}

func assistant(text string, calls ...llm.Content) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonStop}
	if text != "" {
		m.Content = append(m.Content, llm.Text(text))
	}
	m.Content = append(m.Content, calls...)
	if len(calls) > 0 {
		m.StopReason = llm.StopReasonToolUse
	}
	return m
}

func call(id, name, args string) llm.Content {
	return llm.ToolCall(id, name, json.RawMessage(args))
}

func result(id, name, text string) llm.Message {
	return llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: name, Content: []llm.Content{llm.Text(text)}}
}

func rep(s string, n int) string { return strings.Repeat(s, n) }

// stamp numbers the messages' timestamps 1..n, so tests can name them.
func stamp(msgs ...llm.Message) []llm.Message {
	for i := range msgs {
		msgs[i].Timestamp = int64(i + 1)
	}
	return msgs
}

func stamps(msgs []llm.Message) []int64 {
	out := make([]int64, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Timestamp)
	}
	return out
}

func chunkStamps(chunks [][]llm.Message) [][]int64 {
	out := make([][]int64, 0, len(chunks))
	for _, c := range chunks {
		out = append(out, stamps(c))
	}
	return out
}

// checkPairing returns "" when every tool call in msgs has exactly one
// result after it, before the next assistant message, and every result
// answers such a call; otherwise what is wrong.
func checkPairing(msgs []llm.Message) string {
	open := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleAssistant:
			for id := range open {
				return "call " + id + " has no result before the next assistant message"
			}
			for _, c := range m.ToolCalls() {
				if !m.StopReason.Failed() {
					open[c.ID] = true
				}
			}
		case llm.RoleToolResult:
			if !open[m.ToolCallID] {
				return "result " + m.ToolCallID + " answers no open call"
			}
			delete(open, m.ToolCallID)
		}
	}
	for id := range open {
		return "call " + id + " has no result"
	}
	return ""
}
