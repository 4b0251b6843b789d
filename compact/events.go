package compact

import (
	"context"

	"github.com/agentloop/agentloop/llm"
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

// MarshalJSON writes the event as the payload the agent's event stream
// carries for it ("v":1, the type, and only the fields that are set), so
// the caller can forward it in agent.Event.Data. A compaction record is
// written without the summary's file lists repeated; truncation records
// without their content.
func (e Event) MarshalJSON() ([]byte, error) {
	type record struct {
		Summary         string    `json:"summary"`
		FirstKeptIndex  int       `json:"firstKeptIndex"`
		TokensBefore    int       `json:"tokensBefore"`
		TokensAfter     int       `json:"tokensAfter"`
		Trigger         Trigger   `json:"trigger,omitempty"`
		Files           FileLists `json:"files"`
		Fallback        bool      `json:"fallback,omitempty"`
		DroppedMessages int       `json:"droppedMessages"`
	}
	type trunc struct {
		Index         int    `json:"index"`
		ToolCallID    string `json:"toolCallId"`
		ToolName      string `json:"toolName,omitempty"`
		OriginalChars int    `json:"originalChars"`
		KeptChars     int    `json:"keptChars"`
		Reason        string `json:"reason"`
	}
	type snip struct {
		FirstDroppedIndex int    `json:"firstDroppedIndex"`
		FirstKeptIndex    int    `json:"firstKeptIndex"`
		Note              string `json:"note"`
		DroppedMessages   int    `json:"droppedMessages"`
		DroppedTokens     int    `json:"droppedTokens"`
	}
	w := struct {
		V            int       `json:"v"`
		Type         EventType `json:"type"`
		Trigger      Trigger   `json:"trigger,omitempty"`
		Route        Route     `json:"route,omitempty"`
		TokensBefore int       `json:"tokensBefore,omitempty"`
		TokensAfter  int       `json:"tokensAfter,omitempty"`
		Truncated    int       `json:"truncated,omitempty"`
		Record       *record   `json:"record,omitempty"`
		Records      []trunc   `json:"records,omitempty"`
		Snip         *snip     `json:"snip,omitempty"`
		Error        string    `json:"error,omitempty"`
		Message      string    `json:"message,omitempty"`
	}{V: llm.ProtocolVersion, Type: e.Type, Trigger: e.Trigger, Route: e.Route, TokensBefore: e.TokensBefore,
		TokensAfter: e.TokensAfter, Truncated: e.Truncated, Message: e.Message}
	if e.Err != nil {
		w.Error = e.Err.Error()
	}
	if r := e.Record; r != nil {
		w.Record = &record{Summary: stripFiles(r.Summary), FirstKeptIndex: r.FirstKeptIndex, TokensBefore: r.TokensBefore,
			TokensAfter: r.TokensAfter, Trigger: r.Trigger, Files: r.Files, Fallback: r.Fallback, DroppedMessages: r.DroppedMessages}
	}
	if r := e.Snip; r != nil {
		w.Snip = &snip{r.FirstDroppedIndex, r.FirstKeptIndex, r.Note, r.DroppedMessages, r.DroppedTokens}
	}
	for _, t := range e.Records {
		w.Records = append(w.Records, trunc{t.Index, t.ToolCallID, t.ToolName, t.OriginalChars, t.KeptChars, t.Reason})
	}
	return llm.MarshalJSON(w)
}
