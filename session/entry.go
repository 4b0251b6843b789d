package session

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// CurrentVersion is the transcript format version this package writes. It
// is pi's session format version 3; older files are migrated in memory when
// they are loaded.
const CurrentVersion = 3

// EntryType names the kind of a transcript entry.
type EntryType string

// The entry types. Message, compaction, branch summary and custom message
// entries contribute to the model's context; the others are metadata.
// ToolResultTruncation is ours; the rest are pi's.
const (
	EntryMessage             EntryType = "message"
	EntryCompaction          EntryType = "compaction"
	EntryModelChange         EntryType = "model_change"
	EntryThinkingLevelChange EntryType = "thinking_level_change"
	EntryLabel               EntryType = "label"
	EntryCustom              EntryType = "custom"
	EntryToolResultTruncate  EntryType = "tool_result_truncation"
	EntryBranchSummary       EntryType = "branch_summary"
	EntryCustomMessage       EntryType = "custom_message"
	EntrySessionInfo         EntryType = "session_info"
	// EntryHarnessBinding records which external agent engine owns the
	// session's native thread (package harness); ours.
	EntryHarnessBinding EntryType = "harness_binding"
)

// Header is the first line of a transcript file.
type Header struct {
	// Type is always "session".
	Type    string `json:"type"`
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Timestamp is the creation time, ISO 8601 in UTC.
	Timestamp string `json:"timestamp"`
	Cwd       string `json:"cwd"`
	// ParentSession is the path of the file this one was forked from.
	ParentSession string `json:"parentSession,omitempty"`
	// The fields of a subagent's session (package subagent): the session
	// and tool call that started it, its task id, its depth (1 below a
	// top-level session) and its agent type. Recorded at spawn, so a
	// restored child cannot regain the depth it lost.
	ParentSessionID  string `json:"parentSessionId,omitempty"`
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
	TaskID           string `json:"taskId,omitempty"`
	Depth            int    `json:"depth,omitempty"`
	Agent            string `json:"agent,omitempty"`
}

// Subagent describes a subagent's session in its header (CreateOptions).
type Subagent struct {
	ParentSessionID, ParentToolCallID, TaskID, Agent string
	Depth                                            int
}

// Entry is one line of a transcript after the header. Type says which of
// the optional fields are set:
//
//   - message: Message;
//   - compaction: Summary, FirstKeptEntryID, TokensBefore, Details, FromHook.
//     The context built through a compaction is the summary, then the
//     entries from FirstKeptEntryID up to the compaction, then the entries
//     after it. An empty Summary records history dropped without a summary;
//   - model_change: Provider, ModelID;
//   - thinking_level_change: ThinkingLevel;
//   - label: TargetID, Label (empty clears the label);
//   - custom: CustomType, Data (state for extensions, never sent to a model as
//     such; a "snip" entry (SnipCustomType) makes Context leave out the old
//     history it names);
//   - tool_result_truncation: ToolCallID and Content, the replacement content
//     of that call's result in every context built through this entry;
//     TargetID, the result's entry (without it, the latest result of the
//     call id before this entry: ids repeat across turns with some
//     providers, so an id alone may name several results); and optionally
//     Details (sizes, reason) for people;
//   - branch_summary: FromID, Summary; custom_message: CustomType, Content,
//     Display; session_info: Name (read from pi's files, written by Append
//     like any other entry);
//   - harness_binding: Harness, NativeID, Version, Cwd: the native session
//     of an external engine that the next turn resumes; an empty NativeID
//     clears the binding (reset, unbind).
//
// IdemKey, on any entry, makes its append idempotent (below); package
// harness sets it to the mirror id of an item mirrored from an external
// engine's native transcript.
//
// ID, ParentID and Timestamp are filled in by Session.Append.
type Entry struct {
	Type EntryType `json:"type"`
	ID   string    `json:"id"`
	// ParentID is the entry this one follows; "" for a root (written as null).
	ParentID string `json:"parentId"`
	// Timestamp is ISO 8601 in UTC with milliseconds.
	Timestamp string `json:"timestamp"`

	Message *llm.Message `json:"message,omitempty"`

	Summary          string          `json:"summary,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId,omitempty"`
	TokensBefore     int             `json:"tokensBefore,omitempty"`
	Details          json.RawMessage `json:"details,omitempty"`
	FromHook         bool            `json:"fromHook,omitempty"`

	Provider      string            `json:"provider,omitempty"`
	ModelID       string            `json:"modelId,omitempty"`
	ThinkingLevel llm.ThinkingLevel `json:"thinkingLevel,omitempty"`

	TargetID string `json:"targetId,omitempty"`
	Label    string `json:"label,omitempty"`

	CustomType string          `json:"customType,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`

	ToolCallID string        `json:"toolCallId,omitempty"`
	Content    []llm.Content `json:"content,omitempty"`

	FromID  string `json:"fromId,omitempty"`
	Display bool   `json:"display,omitempty"`
	Name    string `json:"name,omitempty"`

	Harness  string `json:"harness,omitempty"`
	NativeID string `json:"nativeId,omitempty"`
	Version  string `json:"version,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	// IdemKey, when set, makes the append idempotent: a session that
	// already holds an entry with this key writes nothing and returns that
	// entry's id. It names what the entry records, so that a retry, a
	// second delivery or a mirror replayed after a crash is written once:
	// a harness mirror id, a subagent delivery key, "<run>/<turn>/<call>".
	IdemKey string `json:"idemKey,omitempty"`
}

// entryJSON mirrors Entry with a nullable parent and a raw content field,
// which pi's custom_message entries may hold as a plain string.
type entryJSON struct {
	Type      EntryType `json:"type"`
	ID        string    `json:"id"`
	ParentID  *string   `json:"parentId"`
	Timestamp string    `json:"timestamp"`

	Message *llm.Message `json:"message,omitempty"`

	Summary          string          `json:"summary,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId,omitempty"`
	TokensBefore     int             `json:"tokensBefore,omitempty"`
	Details          json.RawMessage `json:"details,omitempty"`
	FromHook         bool            `json:"fromHook,omitempty"`

	Provider      string            `json:"provider,omitempty"`
	ModelID       string            `json:"modelId,omitempty"`
	ThinkingLevel llm.ThinkingLevel `json:"thinkingLevel,omitempty"`

	TargetID string `json:"targetId,omitempty"`
	Label    string `json:"label,omitempty"`

	CustomType string          `json:"customType,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`

	ToolCallID string          `json:"toolCallId,omitempty"`
	Content    json.RawMessage `json:"content,omitempty"`

	FromID  string `json:"fromId,omitempty"`
	Display bool   `json:"display,omitempty"`
	Name    string `json:"name,omitempty"`

	Harness  string `json:"harness,omitempty"`
	NativeID string `json:"nativeId,omitempty"`
	Version  string `json:"version,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	IdemKey  string `json:"idemKey,omitempty"`
}

// MarshalJSON writes the entry as one JSON object, parentId null for a root.
func (e Entry) MarshalJSON() ([]byte, error) {
	v := entryJSON{
		Type: e.Type, ID: e.ID, Timestamp: e.Timestamp, Message: e.Message,
		Summary: e.Summary, FirstKeptEntryID: e.FirstKeptEntryID, TokensBefore: e.TokensBefore,
		Details: e.Details, FromHook: e.FromHook, Provider: e.Provider, ModelID: e.ModelID,
		ThinkingLevel: e.ThinkingLevel, TargetID: e.TargetID, Label: e.Label,
		CustomType: e.CustomType, Data: e.Data, ToolCallID: e.ToolCallID,
		FromID: e.FromID, Display: e.Display, Name: e.Name, IdemKey: e.IdemKey,
		Harness: e.Harness, NativeID: e.NativeID, Version: e.Version, Cwd: e.Cwd,
	}
	if e.ParentID != "" {
		p := e.ParentID
		v.ParentID = &p
	}
	if e.Content != nil {
		c, err := llm.MarshalJSON(e.Content)
		if err != nil {
			return nil, err
		}
		v.Content = c
	}
	return llm.MarshalJSON(v)
}

// UnmarshalJSON reads an entry. Content given as a plain string becomes one
// text block.
func (e *Entry) UnmarshalJSON(data []byte) error {
	var v entryJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	e.fromJSON(&v)
	if len(v.Content) > 0 && string(v.Content) != "null" {
		c, err := decodeContent(v.Content)
		if err != nil {
			return fmt.Errorf("entry content: %w", err)
		}
		e.Content = c
	}
	return nil
}

// fromJSON sets e from v, except Content, which the caller decodes.
func (e *Entry) fromJSON(v *entryJSON) {
	*e = Entry{
		Type: v.Type, ID: v.ID, Timestamp: v.Timestamp, Message: v.Message,
		Summary: v.Summary, FirstKeptEntryID: v.FirstKeptEntryID, TokensBefore: v.TokensBefore,
		Details: v.Details, FromHook: v.FromHook, Provider: v.Provider, ModelID: v.ModelID,
		ThinkingLevel: v.ThinkingLevel, TargetID: v.TargetID, Label: v.Label,
		CustomType: v.CustomType, Data: v.Data, ToolCallID: v.ToolCallID,
		FromID: v.FromID, Display: v.Display, Name: v.Name, IdemKey: v.IdemKey,
		Harness: v.Harness, NativeID: v.NativeID, Version: v.Version, Cwd: v.Cwd,
	}
	if v.ParentID != nil {
		e.ParentID = *v.ParentID
	}
}

// decodeContent reads a content field that is either a string or an array
// of blocks, through llm.Message's decoder, which accepts both.
func decodeContent(raw json.RawMessage) ([]llm.Content, error) {
	if len(raw) > 0 && raw[0] == '[' {
		var c []llm.Content
		err := json.Unmarshal(raw, &c)
		return c, err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return []llm.Content{llm.Text(s)}, nil
}

// MessageEntry returns a message entry holding m.
func MessageEntry(m llm.Message) Entry {
	return Entry{Type: EntryMessage, Message: &m}
}

// CompactionEntry returns a compaction entry: the context built through it
// is summary, then the entries from firstKeptEntryID on.
func CompactionEntry(summary, firstKeptEntryID string, tokensBefore int) Entry {
	return Entry{Type: EntryCompaction, Summary: summary, FirstKeptEntryID: firstKeptEntryID, TokensBefore: tokensBefore}
}

// ModelChangeEntry returns an entry recording a switch of model.
func ModelChangeEntry(provider, modelID string) Entry {
	return Entry{Type: EntryModelChange, Provider: provider, ModelID: modelID}
}

// ThinkingLevelEntry returns an entry recording a change of thinking level.
func ThinkingLevelEntry(level llm.ThinkingLevel) Entry {
	return Entry{Type: EntryThinkingLevelChange, ThinkingLevel: level}
}

// LabelEntry returns an entry that labels targetID; an empty label clears it.
func LabelEntry(targetID, label string) Entry {
	return Entry{Type: EntryLabel, TargetID: targetID, Label: label}
}

// CustomEntry returns an extension-state entry, never sent to a model.
func CustomEntry(customType string, data json.RawMessage) Entry {
	return Entry{Type: EntryCustom, CustomType: customType, Data: data}
}

// HarnessBindingEntry returns an entry binding the session to the native
// session nativeID of harness h; an empty nativeID clears the binding.
func HarnessBindingEntry(h, nativeID, version, cwd string) Entry {
	return Entry{Type: EntryHarnessBinding, Harness: h, NativeID: nativeID, Version: version, Cwd: cwd}
}

// TruncationEntry returns an entry replacing the content of the result of
// tool call toolCallID in every context built through it. resultEntryID
// names the result's entry; "" means the latest result of toolCallID
// before the truncation.
func TruncationEntry(resultEntryID, toolCallID string, content []llm.Content) Entry {
	return Entry{Type: EntryToolResultTruncate, TargetID: resultEntryID, ToolCallID: toolCallID, Content: content}
}

// Time parses the entry's timestamp; the zero time if it has none.
func (e *Entry) Time() time.Time { return parseTime(e.Timestamp) }

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// newEntryID returns 8 hex characters not in taken, as pi's entry ids are.
func newEntryID(taken func(string) bool) string {
	var b [4]byte
	for {
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		if taken == nil || !taken(id) {
			return id
		}
	}
}

// NewSessionID returns a fresh session id: a UUID version 7, whose leading
// timestamp makes ids sort by creation time.
func NewSessionID() string { return newUUIDv7(time.Now()) }

func newUUIDv7(now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(now.UnixMilli())
	b[0], b[1], b[2] = byte(ms>>40), byte(ms>>32), byte(ms>>24)
	b[3], b[4], b[5] = byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
