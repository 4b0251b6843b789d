package session

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// Repairer runs Repair on a history that grows by appends, as the agent's
// does between model calls, repairing only what was appended since the
// previous call. Its results are Repair's, byte for byte, except that a
// synthetic result keeps the timestamp of the call that first made it.
//
// It works because Repair is local to spans that start at an assistant
// message: for a history P+S where S starts with an assistant message that
// the sanitiser keeps, and Repair(P) does not end with an assistant message
// (Gemini merges consecutive ones), Repair(P+S) is Repair(P)+Repair(S).
// The Repairer keeps the longest such P it has seen, with its repair, and
// checks on every call that the history still starts with it (message by
// message, by shared content rather than by reading it); a history that was
// rewritten (compaction, snip, another conversation) or edited gets a full
// pass. Options whose work is not span-local (HistoryTurns, which counts
// from the end, and PreserveSignedThinking, which looks for ids across
// turns) always get the full pass. Messages handed to it must not be edited
// in place afterwards, which the agent's history never is.
//
// The slice Repair returns is the history itself when nothing needed a
// repair; otherwise it shares memory with the Repairer and stays valid
// until the next call (the agent sends it and is done with it before it
// asks again). A Repairer is safe for concurrent use.
type Repairer struct {
	opts RepairOptions

	mu  sync.Mutex
	in  []llm.Message // the kept prefix P, our own copy of its headers
	out []llm.Message // Repair(P) unless ident; its spare capacity holds the last result's tail
	// ident says Repair(P) is P itself, so out is not kept (yet).
	ident bool
}

// NewRepairer returns a Repairer that repairs with opts.
func NewRepairer(opts RepairOptions) *Repairer {
	return &Repairer{opts: opts, ident: true}
}

// Repair returns Repair(msgs, opts). It never changes msgs' elements.
func (r *Repairer) Repair(msgs []llm.Message) []llm.Message {
	if r.opts.HistoryTurns > 0 || r.opts.PreserveSignedThinking {
		return Repair(msgs, r.opts)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := len(r.in)
	// The kept prefix holds only if the history still starts with it and
	// goes on, if at all, with a message it may be cut before (a withdrawn
	// turn regrown by a user message may not).
	if k > len(msgs) || !samePrefix(msgs[:k], r.in) || k > 0 && k < len(msgs) && !r.cuttable(&msgs[k]) {
		// A new buffer: results handed out before keep theirs.
		k, r.in, r.out, r.ident = 0, r.in[:0], nil, true
	}
	if c := r.cut(msgs, k); c > k {
		mid := Repair(msgs[k:c], r.opts)
		if n := len(mid); n == 0 || mid[n-1].Role != llm.RoleAssistant {
			r.grow(msgs[:k], mid, msgs[k:c])
			r.in = append(r.in, msgs[k:c]...)
			k = c
		}
	}
	rest := Repair(msgs[k:], r.opts)
	if r.ident && same(rest, msgs[k:]) {
		return msgs
	}
	r.keep(msgs[:k])
	if len(r.out) == 0 {
		return rest
	}
	res := append(r.out, rest...)
	return res[:len(res):len(res)]
}

// grow appends the repair of a span (in before repair, out after) to the
// kept output, first keeping the output of the prefix p when it was p
// itself and now no longer will be.
func (r *Repairer) grow(p, out, in []llm.Message) {
	if r.ident && same(out, in) {
		return
	}
	r.keep(p)
	r.out = append(r.out, out...)
}

// keep makes out hold the output of the prefix p, which is p itself while
// ident.
func (r *Repairer) keep(p []llm.Message) {
	if r.ident {
		r.out, r.ident = append(r.out[:0], p...), false
	}
}

// same reports whether a and b are the same slice.
func same(a, b []llm.Message) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Reset forgets the kept prefix, so the next call makes a full pass.
func (r *Repairer) Reset() {
	r.mu.Lock()
	r.in, r.out, r.ident = nil, nil, true
	r.mu.Unlock()
}

// cut returns the index of the last message after k at which the history
// may be split (an assistant message the sanitiser keeps), or -1.
func (r *Repairer) cut(msgs []llm.Message, k int) int {
	for i := len(msgs) - 1; i > k; i-- {
		if r.cuttable(&msgs[i]) {
			return i
		}
	}
	return -1
}

// cuttable reports whether a history may be cut before m: m is an
// assistant message the sanitiser keeps, so it starts a span.
func (r *Repairer) cuttable(m *llm.Message) bool {
	if m.Role != llm.RoleAssistant {
		return false
	}
	return len(SanitizeToolCalls([]llm.Message{*m}, SanitizeOptions{AllowedTools: r.opts.AllowedTools})) == 1
}

// samePrefix reports whether msgs starts with the messages of kept: the
// same fields and the same content blocks (shared, not equal).
func samePrefix(msgs, kept []llm.Message) bool {
	for i := range kept {
		if !sameMessage(&msgs[i], &kept[i]) {
			return false
		}
	}
	return true
}

func sameMessage(a, b *llm.Message) bool {
	return a.Role == b.Role && a.Timestamp == b.Timestamp && a.StopReason == b.StopReason &&
		len(a.Content) == len(b.Content) && (len(a.Content) == 0 || &a.Content[0] == &b.Content[0]) &&
		a.ToolCallID == b.ToolCallID && a.ToolName == b.ToolName && a.IsError == b.IsError &&
		a.ErrorMessage == b.ErrorMessage && a.Usage == b.Usage && a.Provider == b.Provider &&
		a.Model == b.Model && a.API == b.API && sameBytes(a.Details, b.Details) &&
		len(a.Extra) == len(b.Extra) && (len(a.Extra) == 0 || sameExtra(a.Extra, b.Extra))
}

func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b)
}

func sameExtra(a, b map[string]json.RawMessage) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || !sameBytes(v, w) {
			return false
		}
	}
	return true
}
