package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentloop/agentloop/llm"
)

// FileRepair reports what RepairFile did.
type FileRepair struct {
	// Backup is the copy of the original file; "" when nothing changed.
	Backup string
	// DroppedLines are the 1-based numbers of the lines removed.
	DroppedLines []int
	// Reparented counts entries whose parent was dropped and which now
	// follow the entry before them in the file.
	Reparented int
}

// RepairFile drops every line of a transcript that is not a valid entry,
// including a torn last line, after copying the file to a backup. Entries
// whose parent went missing are attached to the entry before them in the
// file, which is where a linear run would have put them. The header must
// be valid. The caller holds the session's lock (JSONLStore.Repair does).
func RepairFile(path string) (*FileRepair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("repair session %s: %w", path, err)
	}
	rep := &FileRepair{}
	var out bytes.Buffer
	out.Grow(len(data))
	ids := map[string]bool{}
	prev := ""
	lineNo := 0
	haveHeader := false
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
		if !haveHeader {
			var h Header
			if json.Unmarshal(trimmed, &h) != nil || h.Type != "session" {
				return nil, fmt.Errorf("repair session %s: %w", path, errNoHeader)
			}
			if h.Version != CurrentVersion {
				return nil, fmt.Errorf("repair session %s: format version %d; open the session once to migrate it to %d, then repair", path, h.Version, CurrentVersion)
			}
			haveHeader = true
			out.Write(trimmed)
			out.WriteByte('\n')
			continue
		}
		var e Entry
		if json.Unmarshal(trimmed, &e) != nil || e.Type == "" || e.ID == "" || i < 0 {
			rep.DroppedLines = append(rep.DroppedLines, lineNo)
			continue
		}
		if e.ParentID != "" && !ids[e.ParentID] {
			e.ParentID = prev
			rep.Reparented++
			if trimmed, err = llm.MarshalJSON(e); err != nil {
				return nil, fmt.Errorf("repair session %s: line %d: %w", path, lineNo, err)
			}
		}
		ids[e.ID] = true
		prev = e.ID
		out.Write(trimmed)
		out.WriteByte('\n')
	}
	if !haveHeader {
		return nil, fmt.Errorf("repair session %s: %w", path, errNoHeader)
	}
	if len(rep.DroppedLines) == 0 && rep.Reparented == 0 {
		return rep, nil
	}
	if rep.Backup, err = backupFile(path); err != nil {
		return nil, fmt.Errorf("repair session %s: %w", path, err)
	}
	if err := writeFileAtomic(path, out.Bytes(), true); err != nil {
		return nil, fmt.Errorf("repair session %s: %w", path, err)
	}
	return rep, nil
}
