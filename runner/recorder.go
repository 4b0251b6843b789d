package runner

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/session"
)

// SessionRecorder persists a Compactor's decisions into a session, as a run
// does: a compaction as a compaction entry, truncations as
// tool_result_truncation entries, a snip as a snip entry. A caller that
// compacts a session outside a run (agentloop compact) binds one to its
// Compactor.
type SessionRecorder struct {
	Session session.Session
	// EntryIDs returns the entry id of each message of the history given
	// to the Compactor ("" for a message with no entry, which then stands
	// for the next one that has one). It is called at every record, so the
	// history may grow between calls.
	EntryIDs func() []string
}

var (
	_ compact.Recorder     = (*SessionRecorder)(nil)
	_ compact.SnipRecorder = (*SessionRecorder)(nil)
)

// entry returns the first entry id of the messages from index i up to
// (not including) end.
func (r *SessionRecorder) entry(i, end int) string {
	ids := r.EntryIDs()
	for ; i < min(end, len(ids)); i++ {
		if ids[max(0, i)] != "" {
			return ids[max(0, i)]
		}
	}
	return ""
}

// entryAt returns ids[i], or "" when i is out of range.
func entryAt(ids []string, i int) string {
	if i < 0 || i >= len(ids) {
		return ""
	}
	return ids[i]
}

// RecordCompaction appends a compaction entry.
func (r *SessionRecorder) RecordCompaction(ctx context.Context, rec compact.CompactionRecord) error {
	first := r.entry(rec.FirstKeptIndex, len(r.EntryIDs()))
	_, err := r.Session.Append(ctx, session.CompactionEntry(rec.Summary, first, rec.TokensBefore))
	return err
}

// RecordTruncations appends one tool_result_truncation entry per record.
func (r *SessionRecorder) RecordTruncations(ctx context.Context, recs []compact.Truncation) error {
	for _, t := range recs {
		if _, err := r.Session.Append(ctx, session.TruncationEntry(entryAt(r.EntryIDs(), t.Index), t.ToolCallID, t.Content)); err != nil {
			return err
		}
	}
	return nil
}

// RecordSnip appends a snip entry.
func (r *SessionRecorder) RecordSnip(ctx context.Context, rec compact.SnipRecord) error {
	from := r.entry(rec.FirstDroppedIndex, rec.FirstKeptIndex)
	to := r.entry(rec.FirstKeptIndex, len(r.EntryIDs()))
	if from == "" || to == "" {
		return fmt.Errorf("record a snip of messages %d to %d: they have no session entries, so a reload will show them again",
			rec.FirstDroppedIndex, rec.FirstKeptIndex)
	}
	_, err := r.Session.Append(ctx, session.SnipEntry(session.SnipData{FirstDroppedEntryID: from, FirstKeptEntryID: to,
		Note: rec.Note, DroppedMessages: rec.DroppedMessages, DroppedTokens: rec.DroppedTokens}))
	return err
}
