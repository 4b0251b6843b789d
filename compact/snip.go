package compact

import (
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// turnStarts marks the user messages that begin a turn: no tool call is
// waiting for its result there.
func turnStarts(msgs []llm.Message) []bool {
	ok := validCuts(msgs)
	for i := range msgs {
		ok[i] = ok[i] && msgs[i].Role == llm.RoleUser
	}
	return ok
}

// SnipNote is the text put where Snip removed messages.
func SnipNote(removed, tokens int) string {
	return fmt.Sprintf("[agentloop] %d earlier messages (about %d tokens) were removed here to fit the context window.",
		removed, tokens)
}

// DefaultSnipTailWindows is how many context windows of the newest history
// the Compactor's snip never touches by default: only history older than
// that counts as very old.
const DefaultSnipTailWindows = 2

// SnipOptions tune the Compactor's snip; zero values mean the defaults.
type SnipOptions struct {
	// HeadTokens is the least history kept at the start; 0 keeps the
	// first turn (the task as first given).
	HeadTokens int
	// TailTokens is the newest history never snipped; 0 means
	// DefaultSnipTailWindows times the window. Keep it above the prompt
	// budget: what is recent enough to fit is left to microcompact and
	// the summary, and snip only spares the summariser reading history
	// far older than that.
	TailTokens int
}

// Snip drops the middle of a history while keeping its head and its tail:
// the head is the first turns up to at least headTokens (at least the
// first turn), the tail the newest turns holding at least tailTokens.
// Cuts fall only at the start of a user turn, so tool calls keep their
// results and roles still alternate; a note saying what was removed is
// put at the start of the first kept tail message. It returns msgs itself
// and 0 when there is no middle to drop.
func Snip(msgs []llm.Message, headTokens, tailTokens int) ([]llm.Message, int) {
	a, b, ok := snipRange(msgs, headTokens, tailTokens)
	if !ok {
		return msgs, 0
	}
	dropped := MessagesTokens(msgs[a:b])
	out := make([]llm.Message, 0, len(msgs)-(b-a))
	out = append(out, msgs[:a]...)
	out = append(out, withNote(&msgs[b], SnipNote(b-a, dropped)))
	out = append(out, msgs[b+1:]...)
	return out, b - a
}

// snipRange finds the middle Snip drops: msgs[a:b], with a > 0 the end of
// the head and b the start of the tail, both user turn starts.
func snipRange(msgs []llm.Message, headTokens, tailTokens int) (a, b int, ok bool) {
	starts := turnStarts(msgs)
	// a: end of the head, the first turn start after at least headTokens.
	a, sum := -1, 0
	for i := range msgs {
		if i > 0 && starts[i] && sum >= headTokens {
			a = i
			break
		}
		sum += MessageTokens(&msgs[i])
	}
	if a < 0 {
		return 0, 0, false
	}
	// b: start of the tail, the newest turn start with at least
	// tailTokens from it to the end.
	b, sum = -1, 0
	for i := len(msgs) - 1; i >= 0; i-- {
		sum += MessageTokens(&msgs[i])
		if starts[i] && sum >= tailTokens {
			b = i
			break
		}
	}
	if b <= a {
		return 0, 0, false
	}
	return a, b, true
}

// withNote returns a copy of m with note as its first content block.
func withNote(m *llm.Message, note string) llm.Message {
	out := m.Clone()
	out.Content = append([]llm.Content{llm.Text(note)}, out.Content...)
	return out
}

// Microcompact defaults.
const (
	// DefaultMicrocompactKeep is how many of the newest tool results are
	// always kept whole.
	DefaultMicrocompactKeep = 3
	// DefaultMicrocompactMinChars is the size from which an old result is
	// worth clearing.
	DefaultMicrocompactMinChars = 2_000
)

// MicrocompactOptions tune Microcompact; zero values mean the defaults.
type MicrocompactOptions struct {
	// Keep is how many of the newest tool results stay whole.
	Keep int
	// KeepTokens, when positive, also bounds the newest results kept
	// whole by their estimated tokens together; the newest one is always
	// kept.
	KeepTokens int
	// MinChars is the least text (or an image) a result must hold to be
	// cleared.
	MinChars int
}

// Tombstone is the text that replaces a cleared tool result.
func Tombstone(callID, toolName string, chars int) string {
	return fmt.Sprintf(tombstonePrefix+"%s call %s (%d characters) was cleared to save context. "+
		"Run the tool again if you need it.", toolName, callID, chars)
}

// Microcompact replaces the content of old, bulky tool results with a
// tombstone naming the tool call, keeping the newest opts.Keep results
// (within opts.KeepTokens) whole. Every result keeps its place, so pairing holds. It returns msgs
// itself when nothing was cleared, else a copy and one Truncation per
// cleared result (Reason "microcompact").
func Microcompact(msgs []llm.Message, opts MicrocompactOptions) ([]llm.Message, []Truncation) {
	if opts.Keep <= 0 {
		opts.Keep = DefaultMicrocompactKeep
	}
	if opts.MinChars <= 0 {
		opts.MinChars = DefaultMicrocompactMinChars
	}
	// last is the oldest result kept whole; results before it may go.
	seen, tokens := 0, 0
	last := len(msgs)
	for i := len(msgs) - 1; i >= 0 && seen < opts.Keep; i-- {
		if msgs[i].Role != llm.RoleToolResult {
			continue
		}
		tokens += MessageTokens(&msgs[i])
		if seen > 0 && opts.KeepTokens > 0 && tokens > opts.KeepTokens {
			break
		}
		seen++
		last = i
	}
	if last == len(msgs) {
		return msgs, nil
	}
	var out []llm.Message
	var recs []Truncation
	for i := 0; i < last; i++ {
		m := &msgs[i]
		if m.Role != llm.RoleToolResult {
			continue
		}
		chars := MessageChars(m)
		if chars < opts.MinChars || isTombstone(m) {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		out[i].Content = []llm.Content{llm.Text(Tombstone(m.ToolCallID, m.ToolName, chars))}
		recs = append(recs, truncation(i, &out[i], ToolResultTextChars(m), "microcompact"))
	}
	if out == nil {
		return msgs, nil
	}
	return out, recs
}

const tombstonePrefix = "[agentloop] The output of "

func isTombstone(m *llm.Message) bool {
	return len(m.Content) == 1 && m.Content[0].Type == llm.ContentText && strings.HasPrefix(m.Content[0].Text, tombstonePrefix)
}
