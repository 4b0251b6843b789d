package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrNotFound is returned for a session that does not exist (or has no
// file yet: a file is created with the first user message).
var ErrNotFound = errors.New("session not found")

// CorruptLineError reports a line in the middle of a transcript that is not
// a valid entry. Such a line cannot come from a crash (a torn line can only
// be the last one), so it is refused rather than skipped; Repair drops it
// after taking a backup.
type CorruptLineError struct {
	Path string
	Line int // 1-based
	Err  error
}

func (e *CorruptLineError) Error() string {
	return fmt.Sprintf("session file %s: line %d is not a valid entry (%v); "+
		"run `agentloop sessions repair` to drop it (the original is kept as a backup)", e.Path, e.Line, e.Err)
}

func (e *CorruptLineError) Unwrap() error { return e.Err }

// Transcript is a session file in memory: the header and every entry, in
// file order, across all branches. Treat it as read-only, and use it from
// one goroutine at a time (it builds an id index on first use); a Session
// hands out snapshots, so each reader can have its own.
type Transcript struct {
	Header  Header
	Entries []Entry
	// Leaf is the id of the current position: the last entry of the file
	// unless a session moved it with Branch. "" for an empty transcript.
	Leaf string
	// Warnings says what loading tolerated: a dropped torn last line, a
	// migration from an older version, entries whose parent is missing.
	Warnings []string

	index map[string]int
	// keys indexes the entries by IdemKey, built on first use.
	keys map[string]int
	// partial marks a transcript read from its tail (readTail): it holds
	// the entries from where the current path's context starts to the end
	// of the file, enough for Context at the leaf it was read at and at
	// the entries appended after it, and nothing else.
	partial bool
	// tailFrom is the offset of the first line read of a partial one.
	tailFrom int64
}

// Entry returns the entry with the given id.
func (t *Transcript) Entry(id string) (*Entry, bool) {
	i, ok := t.indexOf(id)
	if !ok {
		return nil, false
	}
	return &t.Entries[i], true
}

func (t *Transcript) indexOf(id string) (int, bool) {
	if t.index == nil {
		t.index = make(map[string]int, len(t.Entries))
		for i := range t.Entries {
			t.index[t.Entries[i].ID] = i
		}
	}
	i, ok := t.index[id]
	return i, ok
}

// ByIdemKey returns the first entry carrying the idempotency key key
// (Entry.IdemKey).
func (t *Transcript) ByIdemKey(key string) (*Entry, bool) {
	if key == "" {
		return nil, false
	}
	if t.keys == nil {
		t.keys = map[string]int{}
		for i := range t.Entries {
			if k := t.Entries[i].IdemKey; k != "" {
				if _, dup := t.keys[k]; !dup {
					t.keys[k] = i
				}
			}
		}
	}
	i, ok := t.keys[key]
	if !ok {
		return nil, false
	}
	return &t.Entries[i], true
}

// Binding returns the harness binding in force at leafID: the last
// harness_binding entry on its path, nil when there is none or it was
// cleared.
func (t *Transcript) Binding(leafID string) *Entry {
	path := t.Path(leafID)
	for i := len(path) - 1; i >= 0; i-- {
		if e := path[i]; e.Type == EntryHarnessBinding {
			if e.NativeID == "" {
				return nil
			}
			return e
		}
	}
	return nil
}

// add appends e and keeps the indexes current.
func (t *Transcript) add(e Entry) {
	t.Entries = append(t.Entries, e)
	if t.index != nil {
		t.index[e.ID] = len(t.Entries) - 1
	}
	if t.keys != nil && e.IdemKey != "" {
		if _, dup := t.keys[e.IdemKey]; !dup {
			t.keys[e.IdemKey] = len(t.Entries) - 1
		}
	}
	t.Leaf = e.ID
}

// clone returns a copy that shares no mutable state with t.
func (t *Transcript) clone() *Transcript {
	c := &Transcript{Header: t.Header, Leaf: t.Leaf}
	c.Entries = append([]Entry(nil), t.Entries...)
	c.Warnings = append([]string(nil), t.Warnings...)
	return c
}

// LoadFile reads a transcript file without locking it. A torn last line is
// dropped with a warning; a corrupt line elsewhere is a *CorruptLineError.
func LoadFile(path string) (*Transcript, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("load session %s: %w", path, ErrNotFound)
		}
		return nil, fmt.Errorf("load session: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes the bytes of a transcript file; path is used in messages.
// It never panics on any input.
func Parse(path string, data []byte) (*Transcript, error) {
	t := &Transcript{}
	complete, torn := splitTorn(data)
	if len(torn) > 0 {
		t.Warnings = append(t.Warnings, fmt.Sprintf(
			"dropped an incomplete last line (%d bytes), left by a write that did not finish", len(torn)))
	}
	lineNo := 0
	haveHeader := false
	ld := lineDecoder{data: complete}
	for off := 0; off < len(complete); {
		i := bytes.IndexByte(complete[off:], '\n')
		start, end := off, off+i
		off = end + 1
		lineNo++
		line := bytes.TrimSpace(complete[start:end])
		if len(line) == 0 {
			continue
		}
		if !haveHeader {
			if err := json.Unmarshal(line, &t.Header); err != nil || t.Header.Type != "session" {
				if err == nil {
					err = fmt.Errorf("type is %q, want \"session\"", t.Header.Type)
				}
				return nil, &CorruptLineError{Path: path, Line: lineNo, Err: fmt.Errorf("bad header: %w", err)}
			}
			haveHeader = true
			t.Entries = make([]Entry, 0, bytes.Count(complete[off:], []byte{'\n'}))
			continue
		}
		e, err := ld.decode(start, end)
		if err != nil {
			return nil, &CorruptLineError{Path: path, Line: lineNo, Err: err}
		}
		if e.Type == "" {
			return nil, &CorruptLineError{Path: path, Line: lineNo, Err: errors.New("entry has no type")}
		}
		t.Entries = append(t.Entries, e)
	}
	if !haveHeader {
		return nil, fmt.Errorf("load session %s: the file has no header line: %w", path, ErrNotFound)
	}
	if err := migrate(t); err != nil {
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	for i := range t.Entries {
		if t.Entries[i].ID == "" {
			return nil, &CorruptLineError{Path: path, Line: i + 2, Err: errors.New("entry has no id")}
		}
	}
	if n := len(t.Entries); n > 0 {
		t.Leaf = t.Entries[n-1].ID
	}
	missing := 0
	for i := range t.Entries {
		if p := t.Entries[i].ParentID; p != "" {
			if _, ok := t.indexOf(p); !ok {
				missing++
			}
		}
	}
	if missing > 0 {
		t.Warnings = append(t.Warnings, fmt.Sprintf("%d entries name a parent that is not in the file; their branch starts there", missing))
	}
	t.Warnings = append(t.Warnings, treeProblems(t)...)
	return t, nil
}

// repairHint ends the warnings about a broken tree.
const repairHint = "; run `agentloop sessions repair` to fix the file (the original is kept as a backup)"

// treeProblems names what a hand edit or a bad tool can do to the tree of
// a transcript and what no crash leaves: one id on several entries (the
// last one then stands for all), an entry that is its own parent, and a
// cycle of parents. Each changes the context a model sees, so none may
// pass in silence.
func treeProblems(t *Transcript) []string {
	var out []string
	count := make(map[string]int, len(t.Entries))
	var dups []string
	for i := range t.Entries {
		id := t.Entries[i].ID
		if count[id]++; count[id] == 2 {
			dups = append(dups, id)
		}
	}
	for _, id := range dups {
		out = append(out, fmt.Sprintf("entry id %s is used by %d entries; only the last of them can be reached as a parent%s", id, count[id], repairHint))
	}
	// Walk each entry's parents; with the index on the last entry of each
	// id, every chain either ends or comes back to an entry already on it.
	state := make([]byte, len(t.Entries)) // 0 new, 1 on the current walk, 2 done
	for i := range t.Entries {
		if state[i] != 0 {
			continue
		}
		var chain []int
		j, ok := i, true
		for ok && state[j] == 0 {
			state[j] = 1
			chain = append(chain, j)
			if p := t.Entries[j].ParentID; p != "" {
				j, ok = t.indexOf(p)
			} else {
				ok = false // a root
			}
		}
		if ok && state[j] == 1 {
			// j is on this walk: the chain from j on is a cycle.
			k := 0
			for chain[k] != j {
				k++
			}
			cycle := chain[k:]
			if len(cycle) == 1 {
				out = append(out, fmt.Sprintf("entry %s names itself as its parent%s", t.Entries[j].ID, repairHint))
			} else {
				ids := make([]string, len(cycle)+1)
				for n, c := range cycle {
					ids[n] = t.Entries[c].ID
				}
				ids[len(cycle)] = ids[0]
				out = append(out, fmt.Sprintf("entries %s form a cycle of parents%s", strings.Join(ids, " → "), repairHint))
			}
		}
		for _, c := range chain {
			state[c] = 2
		}
	}
	return out
}

// splitTorn splits data into its complete lines (ending in '\n') and a
// trailing fragment without a newline.
func splitTorn(data []byte) (complete, torn []byte) {
	i := bytes.LastIndexByte(data, '\n')
	return data[:i+1], data[i+1:]
}

// migrate brings an older transcript to CurrentVersion in memory.
//
//   - version 1 (or none): a linear list without ids; entries get ids and
//     each one's parent is the entry before it;
//   - version 2: pi's "hookMessage" role became "custom";
//   - newer than CurrentVersion: refused, since we cannot know what we would
//     lose by appending to it.
func migrate(t *Transcript) error {
	v := t.Header.Version
	if v > CurrentVersion {
		return fmt.Errorf("format version %d is newer than this build understands (%d); upgrade agentloop to open it", v, CurrentVersion)
	}
	if v == CurrentVersion {
		return nil
	}
	if v <= 1 {
		prev := ""
		for i := range t.Entries {
			e := &t.Entries[i]
			if e.ID == "" {
				e.ID = fmt.Sprintf("%08x", i+1)
			}
			e.ParentID = prev
			prev = e.ID
		}
	}
	if v <= 2 {
		for i := range t.Entries {
			if m := t.Entries[i].Message; m != nil && m.Role == "hookMessage" {
				m.Role = "custom"
			}
		}
	}
	t.Warnings = append(t.Warnings, "migrated from format version "+strconv.Itoa(v)+" to "+strconv.Itoa(CurrentVersion)+" in memory")
	t.Header.Version = CurrentVersion
	return nil
}
