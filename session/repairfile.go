package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// FileRepair reports what RepairFile did.
type FileRepair struct {
	// Backup is the copy of the original file; "" when nothing changed.
	Backup string
	// DroppedLines are the 1-based numbers of the lines removed.
	DroppedLines []int
	// Reparented counts entries whose parent was dropped, was themselves
	// or came later in the file (a cycle), and which now follow the entry
	// before them in the file.
	Reparented int
	// Renamed lists the entries that repeated an earlier entry's id, as
	// "old→new": each got a fresh id, and the entries after it that named
	// the id as their parent now name it.
	Renamed []string
	// AddedResults lists the tool calls given a synthetic error result
	// (SyntheticResultText), as the call ids: calls left without a result,
	// by a double Ctrl-C for instance, which providers refuse to replay.
	AddedResults []string
}

// Changed reports whether the repair changed the file.
func (r *FileRepair) Changed() bool {
	return len(r.DroppedLines) > 0 || r.Reparented > 0 || len(r.Renamed) > 0 || len(r.AddedResults) > 0
}

// repairLine is one entry line of a file under repair.
type repairLine struct {
	e       Entry
	raw     []byte // the original line, written as it is unless changed
	changed bool
}

// RepairFile makes a transcript whole again, after copying the file to a
// backup:
//
//   - every line that is not a valid entry is dropped, including a torn
//     last line;
//   - an entry whose parent went missing, is itself, or comes later in the
//     file (which is how a cycle of parents is made) is attached to the
//     entry before it in the file, which is where a linear run would have
//     put it;
//   - an entry repeating an earlier entry's id gets a fresh id, and the
//     entries after it that name that id as their parent follow it;
//   - a tool call whose assistant message has no result for it on any
//     branch gets a synthetic error result right after that message, so
//     pairing holds in the file and not only in what is sent.
//
// The header must be valid. The caller holds the session's lock
// (JSONLStore.Repair does).
func RepairFile(path string) (*FileRepair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("repair session %s: %w", path, err)
	}
	rep := &FileRepair{}
	var header []byte
	var lines []repairLine
	ids := map[string]bool{}
	renamed := map[string]string{} // a repeated id → the fresh id of its latest entry
	taken := func(id string) bool { return ids[id] }
	prev := ""
	lineNo := 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+1:]
		}
		lineNo++
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		if header == nil {
			var h Header
			if json.Unmarshal(trimmed, &h) != nil || h.Type != "session" {
				return nil, fmt.Errorf("repair session %s: %w", path, errNoHeader)
			}
			if h.Version != CurrentVersion {
				return nil, fmt.Errorf("repair session %s: format version %d; open the session once to migrate it to %d, then repair", path, h.Version, CurrentVersion)
			}
			header = trimmed
			continue
		}
		var e Entry
		if json.Unmarshal(trimmed, &e) != nil || e.Type == "" || e.ID == "" || i < 0 {
			rep.DroppedLines = append(rep.DroppedLines, lineNo)
			continue
		}
		l := repairLine{e: e, raw: trimmed}
		if p, ok := renamed[l.e.ParentID]; ok {
			l.e.ParentID = p
			l.changed = true
		}
		if l.e.ParentID != "" && !ids[l.e.ParentID] {
			l.e.ParentID = prev
			l.changed = true
			rep.Reparented++
		}
		if ids[l.e.ID] {
			fresh := newEntryID(taken)
			rep.Renamed = append(rep.Renamed, l.e.ID+"→"+fresh)
			renamed[l.e.ID] = fresh
			l.e.ID = fresh
			l.changed = true
		}
		ids[l.e.ID] = true
		prev = l.e.ID
		lines = append(lines, l)
	}
	if header == nil {
		return nil, fmt.Errorf("repair session %s: %w", path, errNoHeader)
	}
	lines = addMissingResults(lines, taken, func(id string) { ids[id] = true }, rep)
	if !rep.Changed() {
		return rep, nil
	}
	var out bytes.Buffer
	out.Grow(len(data))
	out.Write(header)
	out.WriteByte('\n')
	for n := range lines {
		l := &lines[n]
		if l.changed {
			if l.raw, err = llm.MarshalJSON(l.e); err != nil {
				return nil, fmt.Errorf("repair session %s: entry %s: %w", path, l.e.ID, err)
			}
		}
		out.Write(l.raw)
		out.WriteByte('\n')
	}
	if rep.Backup, err = backupFile(path); err != nil {
		return nil, fmt.Errorf("repair session %s: %w", path, err)
	}
	if err := writeFileAtomic(path, out.Bytes(), true); err != nil {
		return nil, fmt.Errorf("repair session %s: %w", path, err)
	}
	return rep, nil
}

// addMissingResults gives every tool call of an assistant entry that no
// result entry answers (a result answers the calls of its nearest
// assistant ancestor, by id, first unanswered first) a synthetic error
// result, inserted right after the assistant entry; the entry's children
// then follow the last synthetic result. Parents come before children in
// lines (RepairFile has made sure of it).
func addMissingResults(lines []repairLine, taken func(string) bool, take func(string), rep *FileRepair) []repairLine {
	owner := make(map[string]string, len(lines)) // entry id → id of its nearest assistant ancestor (itself for one)
	results := map[string]map[string]int{}       // assistant id → call id → results found
	for n := range lines {
		e := &lines[n].e
		if m := e.Message; e.Type == EntryMessage && m != nil && m.Role == llm.RoleAssistant {
			owner[e.ID] = e.ID
			continue
		}
		a := owner[e.ParentID]
		owner[e.ID] = a
		if m := e.Message; a != "" && e.Type == EntryMessage && m != nil && m.Role == llm.RoleToolResult {
			if results[a] == nil {
				results[a] = map[string]int{}
			}
			results[a][m.ToolCallID]++
		}
	}
	var out []repairLine         // nil until an entry is added
	moved := map[string]string{} // assistant id → its last synthetic result
	for n := range lines {
		l := lines[n]
		if p, ok := moved[l.e.ParentID]; ok {
			l.e.ParentID = p
			l.changed = true
		}
		var missing []llm.Content
		if m := l.e.Message; l.e.Type == EntryMessage && m != nil && m.Role == llm.RoleAssistant {
			got := results[l.e.ID]
			for _, c := range m.ToolCalls() {
				if got[c.ID] > 0 {
					got[c.ID]--
					continue
				}
				missing = append(missing, c)
			}
		}
		if len(missing) == 0 && out == nil {
			lines[n] = l
			continue
		}
		if out == nil {
			out = append(make([]repairLine, 0, len(lines)+len(missing)), lines[:n]...)
		}
		out = append(out, l)
		parent := l.e.ID
		for _, c := range missing {
			id := newEntryID(taken)
			take(id)
			r := syntheticResult(c, SyntheticResultText, llm.NowMillis())
			e := MessageEntry(r)
			e.ID, e.ParentID, e.Timestamp = id, parent, formatTime(time.Now())
			out = append(out, repairLine{e: e, changed: true})
			rep.AddedResults = append(rep.AddedResults, c.ID)
			parent = id
		}
		if len(missing) > 0 {
			moved[l.e.ID] = parent
		}
	}
	if out == nil {
		return lines
	}
	return out
}
