package compact

import (
	"context"
)

// Trigger says why a compaction ran.
type Trigger string

// The compaction triggers.
const (
	// TriggerThreshold: the precheck found the prompt over its budget.
	TriggerThreshold Trigger = "threshold"
	// TriggerOverflow: the provider refused the prompt as too long.
	TriggerOverflow Trigger = "overflow"
	// TriggerManual: the user or the caller asked.
	TriggerManual Trigger = "manual"
)

// CompactionRecord is one compaction, as the session stores it: the
// summary that replaces history before FirstKeptIndex.
type CompactionRecord struct {
	// Summary is the text of the summary message (file lists included).
	Summary string
	// FirstKeptIndex is the index, in the messages given to the
	// Compactor, of the first message kept verbatim; everything before it
	// is replaced by the summary.
	FirstKeptIndex int
	// TokensBefore and TokensAfter are the prompt estimates around it.
	TokensBefore int
	TokensAfter  int
	Trigger      Trigger
	// Files are the files the summarised history read and modified.
	Files FileLists
	// Fallback is true when summarisation failed and old history was
	// dropped without a summary; FallbackErr says why.
	Fallback    bool
	FallbackErr error
	// DroppedMessages counts the messages the summary replaces.
	DroppedMessages int
}

// Recorder persists what the Compactor decided, so a reloaded session
// shows the model the same context. The session store implements it; the
// caller binds it. Errors are reported as events, never fatal to the run.
type Recorder interface {
	// RecordCompaction stores a compaction entry.
	RecordCompaction(ctx context.Context, rec CompactionRecord) error
	// RecordTruncations stores tool_result_truncation entries. Each
	// record's Index is an index in the messages given to the Compactor.
	RecordTruncations(ctx context.Context, recs []Truncation) error
}

// SnipRecord is one snip, as the session stores it: the messages from
// FirstDroppedIndex up to FirstKeptIndex (both indices in the messages
// given to the Compactor) are left out of the context, and Note is put at
// the start of the first kept message, a user message that starts a turn.
type SnipRecord struct {
	FirstDroppedIndex int
	FirstKeptIndex    int
	Note              string
	// DroppedMessages and DroppedTokens measure what was left out.
	DroppedMessages int
	DroppedTokens   int
	// TokensBefore and TokensAfter are the prompt estimates around it.
	TokensBefore int
	TokensAfter  int
}

// SnipRecorder is implemented by a Recorder that can also persist snips.
// A Recorder without it keeps snips in memory only: a reloaded session then
// shows the full history again, and the Compactor snips it anew.
type SnipRecorder interface {
	// RecordSnip stores a snip. A snip that includes an earlier one
	// (its range covers the earlier range) replaces it.
	RecordSnip(ctx context.Context, rec SnipRecord) error
}

// EventType names a Compactor event.
type EventType string

// The Compactor's events.
const (
	EventCompactionStart EventType = "auto_compaction_start"
	EventCompactionEnd   EventType = "auto_compaction_end"
	// EventFallback: summarisation failed; history was pruned instead.
	EventFallback EventType = "compaction_fallback"
	// EventTruncation: tool results were shortened or cleared.
	EventTruncation EventType = "tool_result_truncation"
	// EventSnip: the middle of very old history was dropped.
	EventSnip EventType = "history_snip"
	// EventWindowWarning: the model's window is small.
	EventWindowWarning EventType = "context_window_warning"
	// EventOverBudget: nothing more could be removed and the prompt is
	// still over its budget; the call goes ahead and the provider decides.
	EventOverBudget EventType = "context_over_budget"
	// EventRecordError: the Recorder failed.
	EventRecordError EventType = "compaction_record_error"
)

// Event reports what the Compactor did. Fields beyond Type are set where
// they apply.
type Event struct {
	Type    EventType
	Trigger Trigger
	Route   Route
	// TokensBefore and TokensAfter are prompt estimates.
	TokensBefore int
	TokensAfter  int
	// Truncated counts the tool results shortened or cleared.
	Truncated int
	// Record is the compaction, on an end or a fallback.
	Record *CompactionRecord
	// Records are the truncations, on EventTruncation.
	Records []Truncation
	// Snip is the snip, on EventSnip.
	Snip *SnipRecord
	// Err is the failure, on a fallback, an aborted end or a record error.
	Err error
	// Message is a sentence for people.
	Message string
}

// CompactionStart is what BeforeCompaction hooks are told.
type CompactionStart struct {
	Trigger      Trigger
	Messages     int
	TokensBefore int
}
