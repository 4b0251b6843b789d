package session

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/agentloop/agentloop/llm"
)

// Continuing a session needs only the path from the leaf back to where
// its context starts: the first entry kept by the latest compaction on
// it. readTail reads a transcript from its end backwards, chunk by chunk,
// and stops there, so opening a long compacted session costs what its
// tail costs, not what its file does.
//
// It returns ok == false whenever the tail alone cannot give what a full
// load gives, and the caller then loads the whole file: a needed parent
// that is not in the file, a cycle of parents or an id used twice in what
// was read (the full load names them in its warnings), a line that does
// not decode (the full load reports it with its line number), a header of
// another version (the full load migrates it), a truncation whose target
// is not on the path read, a path without a model, or a thinking level
// change somewhere in the part not read (it may be on the path).

// tailMinSize is the file size from which opening a session reads only
// its tail; smaller files load whole, which costs little and keeps every
// warning about entries off the current path. A variable for tests.
var tailMinSize int64 = 1 << 20

// The first chunk read back from the end, and the largest; later chunks
// double. Variables for tests.
var (
	tailFirstChunk int64 = 64 << 10
	tailMaxChunk   int64 = 1 << 20
)

// thinkingNeedle is in every encoding of a thinking_level_change entry's
// type (the closing quote keeps most prose out).
var thinkingNeedle = []byte(`thinking_level_change"`)

// readTail reads the transcript held in the first size bytes of r, which
// end with a newline; the first clean bytes are known to hold no thinking
// level change (from the summary cache, 0 when unknown). The Transcript
// it returns holds the entries from where it stopped to the end, in file
// order, with Leaf the last one.
func readTail(r io.ReaderAt, size, clean int64) (t *Transcript, ok bool, err error) {
	h, headerEnd, ok, err := readHeader(r, size)
	if err != nil || !ok {
		return nil, false, err
	}
	w := tailWalk{index: map[string]int{}}
	pos := size // bytes [pos, size) are read; the carry is the start of them
	var carry []byte
	chunk := tailFirstChunk
	for {
		if pos <= headerEnd {
			// The whole file is read and the path still needs more: a
			// full load says what is missing.
			return nil, false, nil
		}
		start := max(headerEnd, pos-chunk)
		buf := make([]byte, pos-start+int64(len(carry)))
		if _, err := r.ReadAt(buf[:pos-start], start); err != nil {
			return nil, false, err
		}
		copy(buf[pos-start:], carry)
		pos = start
		chunk = min(2*chunk, tailMaxChunk)
		// The bytes before the first newline continue a line that starts
		// in the next chunk back, unless this chunk starts the entries.
		first := 0
		if start > headerEnd {
			first = bytes.IndexByte(buf, '\n') + 1
			if first == 0 {
				carry = buf
				continue
			}
		}
		carry = buf[:first:first]
		if !w.decodeLines(buf[first:]) {
			return nil, false, nil
		}
		switch w.walk() {
		case walkUnsure:
			return nil, false, nil
		case walkMore:
			continue
		}
		from := start + int64(first)
		if w.need == "" {
			// The path goes back to its root: all of it is read.
			return w.transcript(h, from), true, nil
		}
		if !w.complete() {
			return nil, false, nil
		}
		if !w.thinkingBefore() {
			// Any other thinking change, read or not, might be on the
			// path: parents can come after their children in a hand-edited
			// file, so the path may leave the entries read and come back.
			if w.anyThinking() {
				return nil, false, nil
			}
			found, err := containsInRange(r, max(headerEnd, clean), from, thinkingNeedle)
			if err != nil || found {
				return nil, false, err
			}
		}
		return w.transcript(h, from), true, nil
	}
}

// readHeader reads and checks the header line.
func readHeader(r io.ReaderAt, size int64) (h Header, end int64, ok bool, err error) {
	buf := make([]byte, min(size, 64<<10))
	if _, err := r.ReadAt(buf, 0); err != nil {
		return h, 0, false, err
	}
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return h, 0, false, nil
	}
	if err := json.Unmarshal(buf[:i], &h); err != nil || h.Type != "session" || h.Version != CurrentVersion {
		return h, 0, false, nil
	}
	return h, int64(i + 1), true, nil
}

// tailWalk holds the entries read so far, newest first, and how far the
// path from the leaf has been followed through them.
type tailWalk struct {
	rev   []Entry        // entries in reverse file order
	index map[string]int // id → position in rev of its last entry in the file
	dup   bool           // an id was seen twice

	started    bool
	need       string // id of the next entry on the path back; "" at a root
	steps      int
	compaction bool   // the latest compaction on the path is behind us
	firstKept  string // its FirstKeptEntryID
	reached    bool   // the walk got to the first kept entry or a root
	path       []int  // positions in rev of the path walked, leaf first

	thinkingOnPath bool
}

// decodeLines decodes whole lines, last first, into w.rev.
func (w *tailWalk) decodeLines(data []byte) bool {
	for end := len(data); end > 0; {
		start := bytes.LastIndexByte(data[:end-1], '\n') + 1
		line := bytes.TrimSpace(data[start:end])
		end = start
		if len(line) == 0 {
			continue
		}
		e, err := decodeEntry(line)
		if err != nil || e.Type == "" || e.ID == "" {
			return false
		}
		if _, seen := w.index[e.ID]; seen {
			w.dup = true // the later one (seen first) stands, as in a full load
		} else {
			w.index[e.ID] = len(w.rev)
		}
		w.rev = append(w.rev, e)
	}
	return true
}

type walkResult int

const (
	walkDone walkResult = iota
	walkMore
	walkUnsure
)

// walk follows the path as far as the entries read allow.
func (w *tailWalk) walk() walkResult {
	if w.dup {
		return walkUnsure
	}
	if !w.started {
		if len(w.rev) == 0 {
			return walkMore
		}
		w.started, w.need = true, w.rev[0].ID
	}
	for !w.reached {
		if w.need == "" {
			w.reached = true // a root: the whole path is read
			break
		}
		i, ok := w.index[w.need]
		if !ok {
			return walkMore
		}
		if w.steps++; w.steps > len(w.rev) {
			return walkUnsure // a cycle of parents
		}
		e := &w.rev[i]
		w.path = append(w.path, i)
		switch {
		case e.Type == EntryThinkingLevelChange:
			w.thinkingOnPath = true
		case e.Type == EntryCompaction && !w.compaction:
			w.compaction, w.firstKept = true, e.FirstKeptEntryID
			w.need = e.ParentID
			continue
		}
		if w.compaction && e.ID == w.firstKept {
			w.reached = true
			break
		}
		w.need = e.ParentID
	}
	return walkDone
}

// thinkingBefore says whether the path, followed on from where the walk
// stopped through the entries read, has a thinking level change: Context
// takes the last one on the whole path.
func (w *tailWalk) thinkingBefore() bool {
	if w.thinkingOnPath {
		return true
	}
	id := w.need
	for n := 0; id != "" && n <= len(w.rev); n++ {
		i, ok := w.index[id]
		if !ok {
			return false
		}
		if w.rev[i].Type == EntryThinkingLevelChange {
			return true
		}
		id = w.rev[i].ParentID
	}
	return false
}

// anyThinking says whether an entry read is a thinking level change.
func (w *tailWalk) anyThinking() bool {
	for i := range w.rev {
		if w.rev[i].Type == EntryThinkingLevelChange {
			return true
		}
	}
	return false
}

// complete says whether the path read gives the context a full load
// gives: every truncation's target is on it, and it names a model.
func (w *tailWalk) complete() bool {
	onPath := make(map[string]bool, len(w.path))
	model := false
	// Walk from the oldest entry read towards the leaf.
	for k := len(w.path) - 1; k >= 0; k-- {
		e := &w.rev[w.path[k]]
		switch e.Type {
		case EntryToolResultTruncate:
			if e.TargetID != "" && !onPath[e.TargetID] {
				return false
			}
		case EntryModelChange:
			model = true
		case EntryMessage:
			if m := e.Message; m != nil && m.Role == llm.RoleAssistant && m.Model != "" {
				model = true
			}
		}
		onPath[e.ID] = true
	}
	return model
}

// transcript returns the entries read, in file order, from offset from.
func (w *tailWalk) transcript(h Header, from int64) *Transcript {
	t := &Transcript{Header: h, Entries: make([]Entry, len(w.rev))}
	for i := range w.rev {
		t.Entries[len(w.rev)-1-i] = w.rev[i]
	}
	t.Leaf = t.Entries[len(t.Entries)-1].ID
	t.partial, t.tailFrom = true, from
	return t
}

// containsInRange says whether r holds needle between from and to.
func containsInRange(r io.ReaderAt, from, to int64, needle []byte) (bool, error) {
	if from >= to {
		return false, nil
	}
	buf := make([]byte, min(tailMaxChunk, to-from))
	for off := from; off < to; {
		n := min(int64(len(buf)), to-off)
		if _, err := r.ReadAt(buf[:n], off); err != nil {
			return false, err
		}
		if bytes.Contains(buf[:n], needle) {
			return true, nil
		}
		if off+n >= to {
			break
		}
		off += n - int64(len(needle)) + 1 // overlap: a match across chunks
	}
	return false, nil
}
