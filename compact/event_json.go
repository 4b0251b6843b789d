package compact

import (
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
)

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
	for _, t := range e.Records {
		w.Records = append(w.Records, trunc{t.Index, t.ToolCallID, t.ToolName, t.OriginalChars, t.KeptChars, t.Reason})
	}
	return json.Marshal(w)
}
