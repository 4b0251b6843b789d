package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Journal is where a session kept by NewJournalSession persists its
// entries: the backend of a Store that is not a directory of files, such
// as session/pgstore. Each call persists all it is given or nothing.
type Journal interface {
	// Create persists the header and the entries so far, with the first
	// user message last; it is called once, for the first user message.
	Create(ctx context.Context, h Header, entries []Entry) error
	// Append persists e after the entries persisted already.
	Append(ctx context.Context, e Entry) error
	// Close releases what the session holds (its lock or lease).
	Close() error
}

// JournalSession is a Session held in memory whose appends are persisted
// by a Journal before they are taken into memory, so memory never holds
// what the journal refused (a fenced append, a lost connection).
type JournalSession struct {
	mu      sync.Mutex
	t       *Transcript
	j       Journal
	created bool
	pending []Entry // entries waiting for the first user message
	closed  bool
}

var _ Session = (*JournalSession)(nil)

// NewJournalSession returns an open session over j. t is the transcript
// as persisted, or nil for a new session with header h, of which nothing
// is persisted until its first user message (as with a file).
func NewJournalSession(h Header, t *Transcript, j Journal) *JournalSession {
	s := &JournalSession{t: t, j: j, created: t != nil}
	if t == nil {
		s.t = &Transcript{Header: h, index: map[string]int{}}
	}
	s.t.indexOf("")
	return s
}

// ID returns the session id.
func (s *JournalSession) ID() string { return s.t.Header.ID }

// Header returns the transcript header.
func (s *JournalSession) Header() Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Header
}

// Warnings returns what loading the transcript tolerated.
func (s *JournalSession) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.t.Warnings...)
}

// Leaf returns the id of the current leaf.
func (s *JournalSession) Leaf() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Leaf
}

// Transcript returns a snapshot of every entry.
func (s *JournalSession) Transcript() *Transcript {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.clone()
}

// Context builds the model's context at the current leaf.
func (s *JournalSession) Context() Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Context("")
}

// Branch moves the leaf to entryID ("" for a new root).
func (s *JournalSession) Branch(entryID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if entryID != "" {
		if _, ok := s.t.indexOf(entryID); !ok {
			return fmt.Errorf("branch session %s: no entry %q", s.t.Header.ID, entryID)
		}
	}
	s.t.Leaf = entryID
	return nil
}

// Append persists e after the current leaf, then takes it into memory.
// Until the first user message entries wait in memory; that message
// persists them with the header. A journal error leaves the session as it
// was: the entry is not part of it.
func (s *JournalSession) Append(ctx context.Context, e Entry) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.t.Header.ID
	switch {
	case s.closed:
		return "", fmt.Errorf("append to session %s: the session is closed", id)
	case e.Type == "":
		return "", fmt.Errorf("append to session %s: the entry has no type", id)
	}
	if old, seen := s.t.ByIdemKey(e.IdemKey); seen {
		return old.ID, nil
	}
	if e.ID == "" {
		e.ID = newEntryID(func(id string) bool { _, ok := s.t.indexOf(id); return ok })
	} else if _, dup := s.t.indexOf(e.ID); dup {
		return "", fmt.Errorf("append to session %s: entry id %q is already used", id, e.ID)
	}
	e.ParentID = s.t.Leaf
	if e.Timestamp == "" {
		e.Timestamp = formatTime(time.Now())
	}
	if !s.created {
		if e.Type != EntryMessage || e.Message == nil || e.Message.Role != llm.RoleUser {
			s.pending = append(s.pending, e)
			s.t.add(e)
			return e.ID, nil
		}
		all := append(s.pending[:len(s.pending):len(s.pending)], e)
		if err := s.j.Create(ctx, s.t.Header, all); err != nil {
			return "", fmt.Errorf("create session %s: %w", id, err)
		}
		s.created, s.pending = true, nil
		s.t.add(e)
		return e.ID, nil
	}
	if err := s.j.Append(ctx, e); err != nil {
		return "", fmt.Errorf("append to session %s: %w", id, err)
	}
	s.t.add(e)
	return e.ID, nil
}

// EndTurn does nothing: each append is persisted when it returns.
func (s *JournalSession) EndTurn() error { return nil }

// Close releases the session through its journal. Entries still waiting
// for a first user message are discarded.
func (s *JournalSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.j.Close()
}
