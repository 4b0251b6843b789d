package runner

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// CompactRequest is a manual compaction of a stored session, outside any
// run: agentloop compact, and the compact command of the chat and the
// gateway.
type CompactRequest struct {
	// Session is open under its lock; its context at the leaf is
	// compacted and the compaction entry appended to it.
	Session session.Session
	// Model writes the summary; Window is its context window (0: the
	// default).
	Model  llm.Model
	Window int
	// Instructions say what the summary should keep.
	Instructions string
	// Bus fires PreCompact and PostCompact (trigger "manual"); nil fires
	// none.
	Bus *hook.Bus
	// Warn is told what the user should know (a fallback to pruning, a
	// record that could not be written); nil drops it.
	Warn func(string)
}

// CompactFailedError reports a compaction that summarised and dropped
// nothing; the session is left as it was. Cause, when known, is why (the
// summariser's failure).
type CompactFailedError struct{ Cause error }

func (e *CompactFailedError) Error() string {
	if e.Cause == nil {
		return "compaction failed: nothing was summarised or dropped"
	}
	return "compaction failed: " + e.Cause.Error()
}

func (e *CompactFailedError) Unwrap() error { return e.Cause }

// CompactSession summarises the older history of q.Session before its
// recent messages and appends the compaction entry, as a run's
// compaction would. It returns compact.ErrNothingToCompact when the
// session is too short (or empty), and the record of what was done.
func CompactSession(ctx context.Context, q CompactRequest) (*compact.CompactionRecord, error) {
	history := q.Session.Context()
	if len(history.Messages) == 0 {
		return nil, compact.ErrNothingToCompact
	}
	window := q.Window
	if window == 0 {
		window = llm.DefaultContextWindow
	}
	warn := q.Warn
	if warn == nil {
		warn = func(string) {}
	}
	bus := q.Bus
	var done *compact.CompactionRecord
	var failure error
	c, err := compact.New(compact.Config{
		Window:     window,
		Summarizer: &compact.Summarizer{Model: q.Model, Window: window},
		Recorder:   &SessionRecorder{Session: q.Session, EntryIDs: func() []string { return history.EntryIDs }},
		OnEvent: func(ev compact.Event) {
			switch ev.Type {
			case compact.EventCompactionEnd:
				if ev.Record != nil && done == nil {
					done = ev.Record
				}
				if ev.Err != nil && ev.Record == nil {
					failure = ev.Err
				}
			case compact.EventFallback, compact.EventRecordError, compact.EventWindowWarning:
				warn(ev.Message)
			}
		},
		BeforeCompaction: func(ctx context.Context, st compact.CompactionStart) {
			if bus != nil {
				bus.BeforeCompaction(ctx, hook.CompactionEvent{Trigger: "manual", Instructions: q.Instructions,
					Messages: st.Messages, TokensBefore: st.TokensBefore})
			}
		},
		AfterCompaction: func(ctx context.Context, rec compact.CompactionRecord) {
			if bus != nil {
				bus.AfterCompaction(ctx, hook.CompactionEvent{Trigger: "manual", Instructions: q.Instructions,
					TokensBefore: rec.TokensBefore, TokensAfter: rec.TokensAfter, Summary: rec.Summary})
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("compaction: %w", err)
	}
	if _, err := c.Compact(ctx, history.Messages, q.Instructions); err != nil {
		return nil, err
	}
	if done == nil {
		return nil, &CompactFailedError{Cause: failure}
	}
	return done, nil
}
