package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentloop/agentloop/internal/atomicfile"
	"github.com/agentloop/agentloop/llm"
)

// SyncPolicy says when appended entries are flushed to stable storage.
type SyncPolicy int

// The fsync policies. Without fsync an append survives a crash of the
// process but not of the machine.
const (
	// SyncEveryTurn syncs when the caller ends a turn (Session.EndTurn),
	// when the file is created, and on Close. It is the default.
	SyncEveryTurn SyncPolicy = iota
	// SyncEveryEntry syncs after every append.
	SyncEveryEntry
	// SyncNever leaves flushing to the operating system.
	SyncNever
)

// Session is an open session owned by one run: it holds the write lock
// until Close. Its methods are safe for concurrent use, but the lock
// belongs to the run: anything else in the run that writes (a compaction,
// a hook) uses this same handle.
type Session interface {
	// ID returns the session id.
	ID() string
	// Header returns the transcript header.
	Header() Header
	// Append writes e as a child of the current leaf and makes it the new
	// leaf. It fills in e's ID (unless set), ParentID and Timestamp (unless
	// set) and returns the id. An error with a non-empty id means the entry
	// was written and is part of the session, but flushing it to stable
	// storage failed. An entry whose IdemKey the session already holds is
	// not written again: Append returns the id of the one it holds, and the
	// leaf stays where it is.
	Append(ctx context.Context, e Entry) (string, error)
	// Branch moves the leaf to an earlier entry ("" for a new root); the
	// next append continues from there. It writes nothing.
	Branch(entryID string) error
	// Leaf returns the id of the current leaf.
	Leaf() string
	// Transcript returns a snapshot of every entry.
	Transcript() *Transcript
	// Context builds the model's context at the current leaf.
	Context() Context
	// Warnings says what opening the session tolerated or repaired, such
	// as a torn last line cut off; the caller shows them to the user.
	Warnings() []string
	// EndTurn marks the end of a turn: under SyncEveryTurn it flushes the
	// appends since the last turn to stable storage.
	EndTurn() error
	// Close flushes (unless SyncNever) and releases the lock.
	Close() error
}

// FileSession is the Session of a JSONL transcript file.
type FileSession struct {
	mu      sync.Mutex
	path    string
	policy  SyncPolicy
	lock    *FileLock
	t       *Transcript
	f       *os.File
	size    int64
	created bool   // the header is in the file
	pending []byte // lines waiting for the first user message
	dirty   bool
	broken  error
	closed  bool
	// tailLeaf is the leaf the file was read at when only its tail was
	// read (t.partial): what is in memory serves it and what follows it.
	tailLeaf string
}

// openFileSession opens path for appending, under an already held lock.
// A torn tail is cut back to the last newline and reported in the
// transcript's warnings; a corrupt middle line is refused. A missing file
// with create set becomes a new session with header h.
func openFileSession(path string, h Header, create bool, policy SyncPolicy, lock *FileLock) (*FileSession, error) {
	s := &FileSession{path: path, policy: policy, lock: lock}
	if create {
		s.t = &Transcript{Header: h, index: map[string]int{}}
		return s, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open session %s: %w", h.ID, ErrNotFound)
		}
		return nil, fmt.Errorf("open session %s: %w", h.ID, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open session %s: %w", h.ID, err)
	}
	var warnings []string
	if st.Size() >= tailMinSize {
		ok, cut, err := s.openTail(f, st.Size())
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open session %s: %w", h.ID, err)
		}
		if ok {
			return s, nil
		}
		// The tail cannot stand for the file: load it whole (a torn
		// line is cut off already).
		warnings = cut
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open session %s: %w", h.ID, err)
	}
	complete, torn := splitTorn(data)
	if len(torn) > 0 {
		if err := s.cutTorn(f, int64(len(complete))); err != nil {
			f.Close()
			return nil, fmt.Errorf("open session %s: cut off an incomplete last line: %w", h.ID, err)
		}
		warnings = append(warnings, tornWarning(len(torn)))
	}
	s.f, s.size = f, int64(len(complete))
	if len(bytes.TrimSpace(complete)) == 0 {
		// Only a torn header was written: start the file again.
		h.Version, h.Type, h.Timestamp = CurrentVersion, "session", formatTime(time.Now())
		s.t = &Transcript{Header: h, index: map[string]int{}, Warnings: warnings}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("open session %s: %w", h.ID, err)
		}
		s.size = 0
		return s, nil
	}
	t, err := Parse(path, complete)
	if err != nil {
		f.Close()
		return nil, err
	}
	t.Warnings = append(warnings, t.Warnings...)
	t.indexOf("") // build the index once, appends keep it current
	s.t, s.created = t, true
	if t.Header.Version != parseVersion(complete) {
		// A migrated file is rewritten before we append current entries.
		if err := s.rewrite(); err != nil {
			f.Close()
			return nil, fmt.Errorf("open session %s: write the migrated file: %w", h.ID, err)
		}
	}
	return s, nil
}

func tornWarning(n int) string {
	return fmt.Sprintf("cut off an incomplete last line (%d bytes) left by a write that did not finish", n)
}

// cutTorn cuts the file back to its last complete line.
func (s *FileSession) cutTorn(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	if s.policy != SyncNever {
		_ = f.Sync()
	}
	return nil
}

// openTail opens a big file from its tail (readTail). It cuts a torn
// last line off first, as a full open does, and says so in warnings.
// With ok false nothing is changed but that cut, and the caller loads
// the file whole.
func (s *FileSession) openTail(f *os.File, size int64) (ok bool, warnings []string, err error) {
	// Find the end of the last complete line.
	end := int64(-1)
	for back := tailFirstChunk; end < 0; back *= 2 {
		from := max(0, size-back)
		buf := make([]byte, size-from)
		if _, err := f.ReadAt(buf, from); err != nil {
			return false, nil, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			end = from + int64(i) + 1
		} else if from == 0 {
			return false, nil, nil // no complete line at all
		}
	}
	if end < size {
		if err := s.cutTorn(f, end); err != nil {
			return false, nil, fmt.Errorf("cut off an incomplete last line: %w", err)
		}
		warnings = append(warnings, tornWarning(int(size-end)))
	}
	t, ok, err := readTail(f, end, noThinkingBefore(s.path, f, end))
	if err != nil || !ok {
		return false, warnings, err
	}
	t.Warnings = warnings
	t.indexOf("")
	s.t, s.f, s.size, s.created, s.tailLeaf = t, f, end, true, t.Leaf
	return true, nil, nil
}

// full replaces a transcript read from its tail with the whole file, for
// the uses that need every entry. The leaf stays where it is.
func (s *FileSession) full() error {
	if !s.t.partial {
		return nil
	}
	data := make([]byte, s.size)
	if _, err := s.f.ReadAt(data, 0); err != nil {
		return fmt.Errorf("read session %s: %w", s.t.Header.ID, err)
	}
	t, err := Parse(s.path, data)
	if err != nil {
		return err
	}
	t.Warnings = append(s.t.Warnings, t.Warnings...)
	t.Leaf = s.t.Leaf
	t.indexOf("")
	s.t = t
	return nil
}

// reaches says whether the path from id back through the entries in
// memory meets anc.
func (t *Transcript) reaches(id, anc string) bool {
	for n := 0; id != "" && n <= len(t.Entries); n++ {
		if id == anc {
			return true
		}
		i, ok := t.indexOf(id)
		if !ok {
			return false
		}
		id = t.Entries[i].ParentID
	}
	return false
}

// parseVersion reads the version field of the header line.
func parseVersion(data []byte) int {
	var h Header
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		_ = json.Unmarshal(data[:i], &h)
	}
	return h.Version
}

// rewrite replaces the file with the in-memory transcript, keeping the old
// one as a backup.
func (s *FileSession) rewrite() error {
	data, err := encodeTranscript(&s.t.Header, s.t.Entries)
	if err != nil {
		return err
	}
	if _, err := backupFile(s.path); err != nil {
		return err
	}
	if err := writeFileAtomic(s.path, data, s.policy != SyncNever); err != nil {
		return err
	}
	s.f.Close()
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	s.f, s.size = f, int64(len(data))
	return nil
}

// ID returns the session id.
func (s *FileSession) ID() string { return s.t.Header.ID }

// Path returns the transcript file's path.
func (s *FileSession) Path() string { return s.path }

// Header returns the transcript header.
func (s *FileSession) Header() Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Header
}

// Warnings returns what opening the file tolerated or repaired.
func (s *FileSession) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.t.Warnings...)
}

// Leaf returns the id of the current leaf.
func (s *FileSession) Leaf() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Leaf
}

// Transcript returns a snapshot of every entry.
func (s *FileSession) Transcript() *Transcript {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.full(); err != nil {
		c := s.t.clone()
		c.Warnings = append(c.Warnings, "only the end of the file could be read: "+err.Error())
		return c
	}
	return s.t.clone()
}

// Context builds the model's context at the current leaf.
func (s *FileSession) Context() Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Context("")
}

// Branch moves the leaf to entryID ("" for a new root).
func (s *FileSession) Branch(entryID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t.partial && entryID != "" && !s.t.reaches(entryID, s.tailLeaf) {
		// The context of another branch may need entries not read.
		if err := s.full(); err != nil {
			return fmt.Errorf("branch session %s: %w", s.t.Header.ID, err)
		}
	}
	if entryID != "" {
		if _, ok := s.t.indexOf(entryID); !ok {
			return fmt.Errorf("branch session %s: no entry %q", s.t.Header.ID, entryID)
		}
	}
	s.t.Leaf = entryID
	return nil
}

// Append writes e as one line with one write, after the current leaf.
// Until the first user message the entries wait in memory: the file is
// created with that message, so a session that never got a prompt leaves
// no file, and a crash after it never loses the prompt.
func (s *FileSession) Append(ctx context.Context, e Entry) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return "", fmt.Errorf("append to session %s: the session is closed", s.t.Header.ID)
	case s.broken != nil:
		return "", s.broken
	case e.Type == "":
		return "", fmt.Errorf("append to session %s: the entry has no type", s.t.Header.ID)
	}
	if e.IdemKey != "" {
		if _, seen := s.t.ByIdemKey(e.IdemKey); !seen && s.t.partial {
			// An older entry may carry the key: only the whole file can tell.
			if err := s.full(); err != nil {
				return "", fmt.Errorf("append to session %s: %w", s.t.Header.ID, err)
			}
		}
		if old, seen := s.t.ByIdemKey(e.IdemKey); seen {
			return old.ID, nil
		}
	}
	if _, known := s.t.indexOf(e.ID); e.ID != "" && !known && s.t.partial {
		// Only the whole file can tell whether a given id is new.
		if err := s.full(); err != nil {
			return "", fmt.Errorf("append to session %s: %w", s.t.Header.ID, err)
		}
	}
	if e.ID == "" {
		// From a tail, an id is checked against the entries read: with
		// 8 random hex digits, a clash with one of n older entries has a
		// chance of n in 4 billion.
		e.ID = newEntryID(func(id string) bool { _, ok := s.t.indexOf(id); return ok })
	} else if _, dup := s.t.indexOf(e.ID); dup {
		return "", fmt.Errorf("append to session %s: entry id %q is already used", s.t.Header.ID, e.ID)
	}
	e.ParentID = s.t.Leaf
	if e.Timestamp == "" {
		e.Timestamp = formatTime(time.Now())
	}
	line, err := llm.MarshalJSON(e)
	if err != nil {
		return "", fmt.Errorf("append to session %s: encode %s entry: %w", s.t.Header.ID, e.Type, err)
	}
	line = append(line, '\n')
	if !s.created {
		s.pending = append(s.pending, line...)
		if e.Type != EntryMessage || e.Message == nil || e.Message.Role != llm.RoleUser {
			s.t.add(e)
			return e.ID, nil
		}
		if err := s.create(); err != nil {
			s.pending = s.pending[:len(s.pending)-len(line)]
			return "", err
		}
		s.t.add(e)
		if s.policy == SyncNever {
			return e.ID, nil
		}
		err := s.sync()
		syncDir(filepath.Dir(s.path))
		return e.ID, err
	}
	if err := s.write(line); err != nil {
		return "", err
	}
	// The line is in the file from here on, so it is in the transcript
	// too, even if the sync below fails: memory never disagrees with disk.
	s.t.add(e)
	if s.policy == SyncEveryEntry {
		return e.ID, s.sync()
	}
	return e.ID, nil
}

// write appends one line with one write call. A failed or short write is
// cut back off, so the file never keeps a partial line we would then
// append after. It does not sync.
func (s *FileSession) write(line []byte) error {
	n, err := s.f.Write(line)
	if err != nil || n != len(line) {
		if err == nil {
			err = io.ErrShortWrite
		}
		if terr := s.f.Truncate(s.size); terr != nil {
			s.broken = fmt.Errorf("session %s: a write failed (%v) and the partial line could not be removed (%v); reopen the session to recover", s.t.Header.ID, err, terr)
			return s.broken
		}
		return fmt.Errorf("append to session %s: %w", s.t.Header.ID, err)
	}
	s.size += int64(n)
	s.dirty = true
	return nil
}

// create writes the header and the waiting entries in one write. Once
// that write succeeded the file exists, whatever a later sync says: it is
// never written a second time.
func (s *FileSession) create() error {
	id := s.t.Header.ID
	if s.f == nil {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
			return fmt.Errorf("create session %s: %w", id, err)
		}
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("create session %s: %w", id, err)
		}
		s.f = f
	}
	hdr, err := llm.MarshalJSON(s.t.Header)
	if err != nil {
		return fmt.Errorf("create session %s: %w", id, err)
	}
	buf := make([]byte, 0, len(hdr)+1+len(s.pending))
	buf = append(append(append(buf, hdr...), '\n'), s.pending...)
	if err := s.write(buf); err != nil {
		return err
	}
	s.created, s.pending = true, nil
	return nil
}

func (s *FileSession) sync() error {
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sync session %s: %w", s.t.Header.ID, err)
	}
	s.dirty = false
	return nil
}

// EndTurn flushes the turn's appends under SyncEveryTurn.
func (s *FileSession) EndTurn() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.policy == SyncEveryTurn && s.dirty && s.f != nil {
		return s.sync()
	}
	return nil
}

// Close flushes unless SyncNever and releases the lock. Entries still
// waiting for a first user message are discarded.
func (s *FileSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.f != nil {
		if s.policy != SyncNever && s.dirty {
			errs = append(errs, s.sync())
		}
		errs = append(errs, s.f.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Release())
	}
	return errors.Join(errs...)
}

// WriteJSONL writes t as the lines of a transcript file, the header then
// every entry in order: what a JSONLStore holds for it, byte for byte.
// It is the JSONL export of every Store.
func WriteJSONL(w io.Writer, t *Transcript) error {
	data, err := encodeTranscript(&t.Header, t.Entries)
	if err != nil {
		return fmt.Errorf("export session %s: %w", t.Header.ID, err)
	}
	_, err = w.Write(data)
	return err
}

// encodeTranscript writes a header and entries as file bytes.
func encodeTranscript(h *Header, entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return nil, err
	}
	for i := range entries {
		if err := enc.Encode(entries[i]); err != nil {
			return nil, fmt.Errorf("encode entry %s: %w", entries[i].ID, err)
		}
	}
	return buf.Bytes(), nil
}

// writeFileAtomic replaces path with data through a temporary file and a
// rename, so a reader sees the old file or the new one, never a mix.
func writeFileAtomic(path string, data []byte, sync bool) error {
	return atomicfile.Write(path, data, sync)
}

// backupFile copies path to a fresh "<path>.bak" (".bak.2", ... if taken)
// and returns the backup's path.
func backupFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("back up %s: %w", path, err)
	}
	for i := 1; ; i++ {
		bak := path + ".bak"
		if i > 1 {
			bak = fmt.Sprintf("%s.bak.%d", path, i)
		}
		f, err := os.OpenFile(bak, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		return bak, nil
	}
}

func syncDir(dir string) { atomicfile.SyncDir(dir) }
