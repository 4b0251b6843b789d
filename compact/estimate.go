package compact

import (
	"github.com/agentloop/agentloop/llm"
)

// Token accounting constants.
const (
	// CharsPerToken is the divisor of the chars/4 estimate.
	CharsPerToken = 4
	// ImageChars is what one image counts for, in characters (1,200 tokens).
	ImageChars = 4800
	// SafetyMargin multiplies a chars/4 estimate, which undercounts code,
	// JSON and non-English text.
	SafetyMargin = 1.2
)

// MessageChars returns the characters a message counts for: text blocks of
// every role, thinking and tool calls (name plus the JSON of the arguments)
// of assistants, and ImageChars per image. Details are never sent to a
// model and are not counted.
//
// Lengths are in bytes, which overcounts non-ASCII text relative to
// characters: the safe direction for a budget.
func MessageChars(m *llm.Message) int {
	n := 0
	for i := range m.Content {
		c := &m.Content[i]
		switch c.Type {
		case llm.ContentText:
			n += len(c.Text)
		case llm.ContentImage:
			n += ImageChars
		case llm.ContentThinking:
			if m.Role == llm.RoleAssistant {
				n += len(c.Thinking)
			}
		case llm.ContentToolCall:
			if m.Role == llm.RoleAssistant {
				n += len(c.Name) + len(c.Arguments)
			}
		}
	}
	return n
}

// MessageTokens estimates one message: ceil(MessageChars / 4), without the
// safety margin.
func MessageTokens(m *llm.Message) int {
	return ceilDiv(MessageChars(m), CharsPerToken)
}

// MessagesTokens sums MessageTokens over msgs.
func MessagesTokens(msgs []llm.Message) int {
	n := 0
	for i := range msgs {
		n += MessageTokens(&msgs[i])
	}
	return n
}

// SystemTokens estimates the system prompt.
func SystemTokens(system string) int {
	return ceilDiv(len(system), CharsPerToken)
}

// ToolsTokens estimates the tool definitions sent with every request: each
// tool's name, description and parameter schema.
func ToolsTokens(tools []llm.ToolSpec) int {
	n := 0
	for i := range tools {
		n += len(tools[i].Name) + len(tools[i].Description) + len(tools[i].Parameters)
	}
	return ceilDiv(n, CharsPerToken)
}

// Prompt is what one model request carries, for estimation.
type Prompt struct {
	System   string
	Tools    []llm.ToolSpec
	Messages []llm.Message
	// UsageFrom is the index of the first message whose reported usage may
	// be trusted. Usage on an earlier assistant message describes a context
	// that has since been compacted or truncated. 0 trusts every message; a
	// negative value trusts none.
	UsageFrom int
}

// Estimation is a token estimate of a prompt.
type Estimation struct {
	// Tokens is the estimate the budget is checked against.
	Tokens int
	// Reported is the part taken from the provider's usage of the last
	// successful assistant message (0 when none was used).
	Reported int
	// Estimated is the part estimated by chars/4 with the safety margin.
	Estimated int
	// UsageIndex is the message whose usage was used, or -1.
	UsageIndex int
}

// Estimate returns the token estimate of a prompt. When the last successful
// assistant message (at or after UsageFrom) reports its usage, the estimate
// is that usage (the whole prompt the provider saw, plus its reply) plus a
// chars/4 estimate, with margin, of the messages after it. Otherwise every
// part (system prompt, tool schemas and messages) is estimated by chars/4
// and multiplied by SafetyMargin.
func Estimate(p Prompt) Estimation {
	if p.UsageFrom >= 0 {
		for i := len(p.Messages) - 1; i >= p.UsageFrom; i-- {
			m := &p.Messages[i]
			if m.Role != llm.RoleAssistant {
				continue
			}
			if m.StopReason.Failed() || m.Usage == nil {
				break
			}
			used := reportedTokens(m.Usage)
			if used <= 0 {
				break
			}
			est := withMargin(MessagesTokens(p.Messages[i+1:]))
			return Estimation{Tokens: used + est, Reported: used, Estimated: est, UsageIndex: i}
		}
	}
	est := withMargin(SystemTokens(p.System) + ToolsTokens(p.Tools) + MessagesTokens(p.Messages))
	return Estimation{Tokens: est, Estimated: est, UsageIndex: -1}
}

func reportedTokens(u *llm.Usage) int {
	if u.Total > 0 {
		return u.Total
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// withMargin applies SafetyMargin, rounding up, in integers (×6/5) so the
// result does not depend on float rounding.
func withMargin(tokens int) int {
	return ceilDiv(tokens*6, 5)
}

func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
