package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// ToolStartedType is the custom type of the entry written, fenced, just
// before a tool that may change things runs: after a takeover it tells
// that the tool may have run.
const ToolStartedType = "tool_started"

// InterruptedText is the result given to a tool that was running when
// its node stopped.
const InterruptedText = "interrupted: the machine running this tool stopped; it may or may not have taken effect"

// ToolStart is the data of a tool_started entry.
type ToolStart struct {
	RunID  string `json:"runId"`
	Turn   int    `json:"turn"`
	CallID string `json:"callId"`
	Name   string `json:"name"`
}

// key is the idempotency key of what belongs to one call of one turn of
// one run: "<run>/<turn>/<callId>".
func (s ToolStart) key() string { return s.RunID + "/" + strconv.Itoa(s.Turn) + "/" + s.CallID }

// ToolStarted returns the entry to append before running call in turn of
// run runID. Its IdemKey "<run>/<turn>/<callId>/started" makes a retry
// write it once.
func ToolStarted(runID string, turn int, call llm.Content) session.Entry {
	s := ToolStart{RunID: runID, Turn: turn, CallID: call.ID, Name: call.Name}
	data, _ := json.Marshal(s)
	e := session.CustomEntry(ToolStartedType, data)
	e.IdemKey = s.key() + "/started"
	return e
}

// InDoubt returns the tool calls on the path to t's leaf that were
// started (a tool_started entry) and have no result after that entry.
func InDoubt(t *session.Transcript) []ToolStart {
	path := t.Path(t.Leaf)
	var out []ToolStart
	for i, e := range path {
		if e.Type != session.EntryCustom || e.CustomType != ToolStartedType {
			continue
		}
		var s ToolStart
		if json.Unmarshal(e.Data, &s) != nil || s.CallID == "" {
			continue
		}
		answered := false
		for _, later := range path[i+1:] {
			if m := later.Message; later.Type == session.EntryMessage && m != nil &&
				m.Role == llm.RoleToolResult && m.ToolCallID == s.CallID {
				answered = true
				break
			}
		}
		if !answered {
			out = append(out, s)
		}
	}
	return out
}

// InterruptedResult returns the synthetic error result of a tool call in
// doubt. Its IdemKey "<run>/<turn>/<callId>/result" makes a second
// takeover write it once.
func InterruptedResult(s ToolStart) session.Entry {
	e := session.MessageEntry(llm.Message{
		Role: llm.RoleToolResult, ToolCallID: s.CallID, ToolName: s.Name, IsError: true,
		Content: []llm.Content{llm.Text(InterruptedText)}, Timestamp: llm.NowMillis(),
	})
	e.IdemKey = s.key() + "/result"
	return e
}

// ResolveInDoubt settles, after a takeover, the calls sess left in doubt:
// each one for which rerun says false (a tool that may change things and
// is not idempotent) gets the InterruptedResult, and the model decides
// what to do; the others are returned, for the caller to run again.
func ResolveInDoubt(ctx context.Context, sess session.Session, rerun func(toolName string) bool) ([]ToolStart, error) {
	var again []ToolStart
	for _, s := range InDoubt(sess.Transcript()) {
		if rerun != nil && rerun(s.Name) {
			again = append(again, s)
			continue
		}
		if _, err := sess.Append(ctx, InterruptedResult(s)); err != nil {
			return again, fmt.Errorf("record the interrupted call %s: %w", s.CallID, err)
		}
	}
	return again, nil
}
