package runner

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// transcript is the one mirror of a run's history in its session: for each
// message of the agent's history the id of its entry ("" when it is not
// stored), and the messages the run added. Its methods keep them in step
// with the agent's history; nothing else changes them.
type transcript struct {
	sess session.Session // nil for a run without a store
	warn func(string)

	ids []string
	// leafBefore is the session's leaf before the last appended message,
	// where a withdrawn reply's branch starts.
	leafBefore string
	added      []llm.Message
	failed     bool // a write failed (reported once)
	// thinking is the session's last thinking level when the run began.
	thinking llm.ThinkingLevel
}

// begin lines the mirror up with the history the agent starts from: the
// session's context, or a caller's history that is not stored.
func (t *transcript) begin(history []llm.Message) []llm.Message {
	if t.sess == nil {
		t.ids = make([]string, len(history))
		return history
	}
	c := t.sess.Context()
	t.thinking = c.ThinkingLevel
	t.ids = append([]string(nil), c.EntryIDs...)
	for len(t.ids) < len(c.Messages) {
		t.ids = append(t.ids, "")
	}
	return c.Messages
}

// add records a message the agent appended to its history.
func (t *transcript) add(ctx context.Context, m llm.Message) {
	t.added = append(t.added, m)
	if t.sess == nil {
		t.ids = append(t.ids, "")
		return
	}
	t.leafBefore = t.sess.Leaf()
	id, err := t.sess.Append(context.WithoutCancel(ctx), session.MessageEntry(m))
	if err != nil {
		t.error(err)
	}
	t.ids = append(t.ids, id)
}

// dropLast withdraws the last of n messages of the agent's history (a
// failed reply), moving the session's leaf back before it so the failed
// reply stays only as a dead branch.
func (t *transcript) dropLast(n int) {
	if len(t.ids) == n {
		id := t.ids[n-1]
		t.ids = t.ids[:n-1]
		if t.sess != nil && id != "" && t.sess.Leaf() == id {
			if err := t.sess.Branch(t.leafBefore); err != nil {
				t.error(err)
			}
		}
	}
	if k := len(t.added); k > 0 && t.added[k-1].Role == llm.RoleAssistant && t.added[k-1].StopReason.Failed() {
		t.added = t.added[:k-1]
	}
}

// entryIDs returns the entry ids of a history of n messages, or nil when
// the mirror is not in step with it.
func (t *transcript) entryIDs(n int) []string {
	if len(t.ids) == n {
		return t.ids
	}
	return nil
}

// record appends a non-message entry (a model change, a truncation).
func (t *transcript) record(ctx context.Context, e session.Entry) bool {
	if t.sess == nil {
		return true
	}
	if _, err := t.sess.Append(context.WithoutCancel(ctx), e); err != nil {
		t.error(err)
		return false
	}
	return true
}

// endTurn marks a turn's end in the session.
func (t *transcript) endTurn() {
	if t.sess == nil {
		return
	}
	if err := t.sess.EndTurn(); err != nil {
		t.error(err)
	}
}

func (t *transcript) error(err error) {
	if t.failed {
		return
	}
	t.failed = true
	t.warn(fmt.Sprintf("the transcript could not be written: %v", err))
}
