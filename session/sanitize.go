package session

import (
	"bytes"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// MaxToolNameLen is the longest tool name every provider accepts.
const MaxToolNameLen = 64

// ValidToolName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$, the
// tool names every provider accepts.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > MaxToolNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// SanitizeOptions tune SanitizeToolCalls.
type SanitizeOptions struct {
	// AllowedTools, when not nil, lists the tools the model may call now
	// (compared trimmed and case-insensitively); calls to others are
	// dropped from the history.
	AllowedTools []string
	// PreserveSignedThinking treats assistant messages carrying signed or
	// redacted thinking as immutable: the provider verifies the signature
	// against the whole turn, so such a message is kept unchanged or, if
	// any of its calls would have to change, dropped whole.
	PreserveSignedThinking bool
}

// SanitizeToolCalls drops the tool-call blocks of the outgoing history that
// a provider would reject: no id, no arguments, a name that is empty, too
// long or outside [a-zA-Z0-9_-] after trimming, or a tool not allowed. A
// name with surrounding spaces is trimmed. An assistant message left with
// no content is removed. It returns msgs itself when nothing changed.
func SanitizeToolCalls(msgs []llm.Message, opts SanitizeOptions) []llm.Message {
	var allowed map[string]bool
	if opts.AllowedTools != nil {
		allowed = make(map[string]bool, len(opts.AllowedTools))
		for _, n := range opts.AllowedTools {
			allowed[strings.ToLower(strings.TrimSpace(n))] = true
		}
	}
	var out []llm.Message // nil until something changes
	signedIDs := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		keep, changed := *m, false
		if m.Role == llm.RoleAssistant {
			keep, changed = sanitizeMessage(m, allowed, opts.PreserveSignedThinking, signedIDs)
		}
		if changed && out == nil {
			out = append(make([]llm.Message, 0, len(msgs)), msgs[:i]...)
		}
		if out == nil {
			continue
		}
		if changed && len(keep.Content) == 0 {
			continue
		}
		out = append(out, keep)
	}
	if out == nil {
		return msgs
	}
	return out
}

// sanitizeMessage returns the sanitised assistant message and whether it
// changed; an empty content after a change means "drop the message".
func sanitizeMessage(m *llm.Message, allowed map[string]bool, preserveSigned bool, signedIDs map[string]bool) (llm.Message, bool) {
	signed := preserveSigned && hasSignedThinking(m)
	var content []llm.Content // nil until a block changes
	var seen map[string]bool  // call ids of a signed turn
	if signed {
		seen = map[string]bool{}
	}
	for j, c := range m.Content {
		if c.Type != llm.ContentToolCall {
			if content != nil {
				content = append(content, c)
			}
			continue
		}
		name := strings.TrimSpace(c.Name)
		ok := strings.TrimSpace(c.ID) != "" && hasArguments(c.Arguments) && ValidToolName(name) &&
			(allowed == nil || allowed[strings.ToLower(name)])
		if signed {
			// One changed or dropped call, or an id used twice, would break
			// the signature: drop the whole turn.
			if !ok || name != c.Name || seen[c.ID] || signedIDs[c.ID] {
				return llm.Message{}, true
			}
			seen[c.ID] = true
			continue
		}
		if ok && name == c.Name {
			if content != nil {
				content = append(content, c)
			}
			continue
		}
		if content == nil {
			content = append(make([]llm.Content, 0, len(m.Content)), m.Content[:j]...)
		}
		if ok {
			c.Name = name
			content = append(content, c)
		}
	}
	for id := range seen {
		signedIDs[id] = true
	}
	if content == nil {
		return *m, false
	}
	out := *m
	out.Content = content
	return out, true
}

func hasArguments(args []byte) bool {
	a := bytes.TrimSpace(args)
	return len(a) > 0 && !bytes.Equal(a, []byte("null"))
}

func hasSignedThinking(m *llm.Message) bool {
	for _, c := range m.Content {
		if c.Type == llm.ContentThinking && (c.ThinkingSignature != "" || c.Redacted) {
			return true
		}
	}
	return false
}

// StripToolResultDetails removes Details from every tool result: they are
// for logs and interfaces, and must never reach a model or a summariser.
// It returns msgs itself when no result had details.
func StripToolResultDetails(msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for i := range msgs {
		if msgs[i].Role != llm.RoleToolResult || msgs[i].Details == nil {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		out[i].Details = nil
	}
	if out == nil {
		return msgs
	}
	return out
}
