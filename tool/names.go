package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// MaxWireNameLen is the longest tool name every provider accepts.
const MaxWireNameLen = 64

// IsWireSafe reports whether name is accepted as a tool name by every
// provider: it matches ^[a-zA-Z0-9_-]{1,64}$, the strictest of OpenAI's
// and Anthropic's rules.
func IsWireSafe(name string) bool {
	if name == "" || len(name) > MaxWireNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !wireByte(name[i]) {
			return false
		}
	}
	return true
}

func wireByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// NameMap maps a set of tool names to names every provider accepts and
// back. Safe names map to themselves. Others (MCP names with "." or "/",
// names over 64 bytes) have each disallowed byte replaced by "_" and are
// cut to fit; when that loses information in a way that collides with
// another name of the set, or the name had to be cut, a hash of the
// original name is appended, so the mapping stays one-to-one. The result
// depends only on the set, not on the order it was given in.
//
// A NameMap is read-only after NewNameMap and safe for concurrent use.
type NameMap struct {
	toWire   map[string]string
	fromWire map[string]string
}

// NewNameMap returns the mapping for names. Duplicates are ignored.
func NewNameMap(names []string) *NameMap {
	m := &NameMap{toWire: make(map[string]string, len(names)), fromWire: make(map[string]string, len(names))}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	// Safe names keep themselves, so they are placed first.
	for _, n := range sorted {
		if IsWireSafe(n) {
			m.toWire[n] = n
			m.fromWire[n] = n
		}
	}
	for _, n := range sorted {
		if IsWireSafe(n) {
			continue
		}
		w := sanitizeName(n)
		if _, taken := m.fromWire[w]; taken || len(n) > MaxWireNameLen || len(w) == 0 {
			w = hashedName(n, w)
			for i := 0; m.taken(w); i++ {
				// A collision of hashes: vanishingly rare, but never allowed.
				w = hashedName(n+strings.Repeat("#", i+1), w)
			}
		}
		m.toWire[n] = w
		m.fromWire[w] = n
	}
	return m
}

// sanitizeName replaces every byte a provider rejects with "_" and cuts
// the result to MaxWireNameLen.
func sanitizeName(n string) string {
	b := []byte(n)
	for i, c := range b {
		if !wireByte(c) {
			b[i] = '_'
		}
	}
	if len(b) > MaxWireNameLen {
		b = b[:MaxWireNameLen]
	}
	return string(b)
}

// hashedName returns the sanitised name w cut to leave room for "_" and 8
// hex digits of the hash of n.
func hashedName(n, w string) string {
	sum := sha256.Sum256([]byte(n))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(w) > MaxWireNameLen-len(suffix) {
		w = w[:MaxWireNameLen-len(suffix)]
	}
	if w == "" {
		w = "tool"
	}
	return w + suffix
}

// Wire returns the provider-safe name of name. A name outside the set is
// sanitised on the spot (not reversible through the map).
func (m *NameMap) Wire(name string) string {
	if w, ok := m.toWire[name]; ok {
		return w
	}
	if IsWireSafe(name) {
		return name
	}
	return hashedName(name, sanitizeName(name))
}

// Original returns the tool name behind a name a provider sent back. A
// model that answers with the original name itself is understood too. ok
// is false for a name the map does not know; name is then returned as is,
// and the registry will report the tool as not found.
func (m *NameMap) Original(wire string) (name string, ok bool) {
	if n, ok := m.fromWire[wire]; ok {
		return n, true
	}
	if _, ok := m.toWire[wire]; ok {
		return wire, true
	}
	return wire, false
}

// Identity reports whether every name maps to itself, so no renaming is
// needed at all.
func (m *NameMap) Identity() bool {
	for n, w := range m.toWire {
		if n != w {
			return false
		}
	}
	return true
}

// Specs returns copies of specs carrying wire names.
func (m *NameMap) Specs(specs []llm.ToolSpec) []llm.ToolSpec {
	out := slices.Clone(specs)
	for i := range out {
		out[i].Name = m.Wire(out[i].Name)
	}
	return out
}

// ToolCall returns a tool-call block from a provider with its original
// tool name restored. Other blocks are returned unchanged.
func (m *NameMap) ToolCall(c llm.Content) llm.Content {
	if c.Type == llm.ContentToolCall {
		c.Name, _ = m.Original(c.Name)
	}
	return c
}

// WireMessage returns a copy of a history message with the tool names in
// its tool calls, or of the tool result, mapped to wire names; msg is not
// changed.
func (m *NameMap) WireMessage(msg llm.Message) llm.Message {
	if msg.Role == llm.RoleToolResult && msg.ToolName != "" {
		msg.ToolName = m.Wire(msg.ToolName)
		return msg
	}
	changed := false
	for _, c := range msg.Content {
		if c.Type == llm.ContentToolCall && m.Wire(c.Name) != c.Name {
			changed = true
			break
		}
	}
	if !changed {
		return msg
	}
	msg = msg.Clone()
	for i := range msg.Content {
		if msg.Content[i].Type == llm.ContentToolCall {
			msg.Content[i].Name = m.Wire(msg.Content[i].Name)
		}
	}
	return msg
}

func (m *NameMap) taken(w string) bool {
	_, ok := m.fromWire[w]
	return ok
}
