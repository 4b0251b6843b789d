package faux

import "github.com/agentloop/agentloop/llm"

// imageChars is what an image block counts for in estimates (about 1,200
// tokens, a typical screenshot).
const imageChars = 4800

// EstimateRequest estimates the prompt tokens of a request the way the faux
// model counts them: characters of the system prompt, the messages and the
// tool descriptions, divided by 4 and rounded up.
func EstimateRequest(req *llm.Request) int {
	n := len(req.SystemPrompt)
	for i := range req.Messages {
		n += messageChars(&req.Messages[i])
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return (n + 3) / 4
}

// EstimateMessage estimates the tokens of one message (characters / 4).
func EstimateMessage(m *llm.Message) int { return (messageChars(m) + 3) / 4 }

func messageChars(m *llm.Message) int {
	n := len(m.Role)
	for i := range m.Content {
		c := &m.Content[i]
		switch c.Type {
		case llm.ContentText:
			n += len(c.Text)
		case llm.ContentThinking:
			n += len(c.Thinking)
		case llm.ContentToolCall:
			n += len(c.Name) + len(c.Arguments)
		case llm.ContentImage:
			n += imageChars
		}
	}
	return n
}
