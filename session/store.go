package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store keeps sessions. JSONLStore is the default; every implementation
// must pass the conformance suite in package sessiontest.
type Store interface {
	// Create starts a new session and takes its lock. Nothing is persisted
	// before the first user message is appended.
	Create(ctx context.Context, opts CreateOptions) (Session, error)
	// Open takes the lock of an existing session and opens it for
	// appending, continuing from its last entry.
	Open(ctx context.Context, id string, opts *LockOptions) (Session, error)
	// Load reads a session without locking it.
	Load(ctx context.Context, id string) (*Transcript, error)
	// List describes the sessions of one working directory ("" for all),
	// the most recently updated first.
	List(ctx context.Context, cwd string) ([]Info, error)
	// Lock takes a session's write lock without opening it, for work on the
	// whole session such as a repair.
	Lock(ctx context.Context, id string, opts *LockOptions) (Lock, error)
	// Fork copies the path from the root to leafID ("" for the last
	// entry) of session id into a new session, and returns the new id.
	Fork(ctx context.Context, id, leafID string, opts CreateOptions) (string, error)
}

// Lock is a held session write lock.
type Lock interface {
	Release() error
}

// CreateOptions describe a new session.
type CreateOptions struct {
	// ID is the session id; "" means NewSessionID().
	ID string
	// Cwd is the working directory the session belongs to; "" means the
	// process's.
	Cwd string
	// Lock says whether to wait for the lock (relevant to a chosen ID).
	Lock *LockOptions
	// Subagent, when set, records in the header whose child the session
	// is.
	Subagent *Subagent
}

// Info describes a session for listings.
type Info struct {
	ID            string
	Path          string
	Cwd           string
	ParentSession string
	Created       time.Time
	Updated       time.Time
	Stats
	// Err is set when the file could not be read; the other fields are
	// then what the file name tells.
	Err error
}

// EnvHome names the environment variable holding agentloop's home
// directory; sessions live in its "sessions" subdirectory.
const EnvHome = "AGENTLOOP_HOME"

// DefaultDir returns $AGENTLOOP_HOME/sessions, or ~/.agentloop/sessions.
func DefaultDir() (string, error) {
	if h := os.Getenv(EnvHome); h != "" {
		return filepath.Join(h, "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the session directory: set %s: %w", EnvHome, err)
	}
	return filepath.Join(home, ".agentloop", "sessions"), nil
}

// CwdSlug names the directory of a working directory's sessions the way
// pi does: "--" + the path without its leading separator, with "/", "\"
// and ":" replaced by "-", + "--".
func CwdSlug(cwd string) string {
	s := strings.TrimLeft(cwd, `/\`)
	s = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(s)
	return "--" + s + "--"
}

// JSONLStore keeps each session as a JSONL file named
// "<creation time>_<id>.jsonl" in Dir/<cwd slug>/, with its lock beside it.
type JSONLStore struct {
	// Dir is the root of the store, typically DefaultDir().
	Dir string
	// Sync is the fsync policy of the sessions it opens.
	Sync SyncPolicy

	// paths maps exact session ids to their files, as this store created
	// or found them, so that Resolve need not scan Dir for a known id. A
	// miss scans; a path that no longer exists is dropped and scanned for.
	paths sync.Map
}

// DefaultStore returns the JSONL store in DefaultDir.
func DefaultStore() (*JSONLStore, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return NewJSONLStore(dir), nil
}

// NewJSONLStore returns a store rooted at dir with the default policy.
func NewJSONLStore(dir string) *JSONLStore { return &JSONLStore{Dir: dir} }

var _ Store = (*JSONLStore)(nil)

// Create starts a new session in the directory of opts.Cwd.
func (s *JSONLStore) Create(ctx context.Context, opts CreateOptions) (Session, error) {
	h, path, err := s.newHeader(opts)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("create session %s: it already exists", h.ID)
	}
	if opts.ID != "" {
		if p, err := s.Resolve(opts.ID); err == nil && idFromPath(p) == opts.ID {
			return nil, fmt.Errorf("create session %s: it already exists (%s); open it instead", h.ID, p)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create session %s: %w", h.ID, err)
	}
	lock, err := AcquireLock(ctx, path, h.ID, opts.Lock)
	if err != nil {
		return nil, err
	}
	fs, err := openFileSession(path, h, true, s.Sync, lock)
	if err != nil {
		lock.Release()
		return nil, err
	}
	s.paths.Store(h.ID, path)
	return fs, nil
}

func (s *JSONLStore) newHeader(opts CreateOptions) (Header, string, error) {
	h, err := NewHeader(opts)
	if err != nil {
		return Header{}, "", err
	}
	name := strings.NewReplacer(":", "-", ".", "-").Replace(h.Timestamp) + "_" + h.ID + ".jsonl"
	return h, filepath.Join(s.Dir, CwdSlug(h.Cwd), name), nil
}

// NewHeader returns the header of a new session as opts describe it, for
// every Store: a fresh id unless one is chosen (which may not contain '/',
// '\\', '_' or '%', nor start with '.', as it names a file), the process's
// working directory unless one is given, and the creation time now.
func NewHeader(opts CreateOptions) (Header, error) {
	id, cwd := opts.ID, opts.Cwd
	if id == "" {
		id = NewSessionID()
	} else if strings.ContainsAny(id, `/\_%`) || strings.HasPrefix(id, ".") {
		return Header{}, fmt.Errorf("create session: id %q may not contain '/', '\\', '_' or '%%', nor start with '.'", id)
	}
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Header{}, fmt.Errorf("create session: %w", err)
		}
		cwd = wd
	}
	h := Header{Type: "session", Version: CurrentVersion, ID: id, Timestamp: formatTime(time.Now()), Cwd: cwd}
	if sa := opts.Subagent; sa != nil {
		h.ParentSessionID, h.ParentToolCallID, h.TaskID, h.Depth, h.Agent = sa.ParentSessionID, sa.ParentToolCallID, sa.TaskID, sa.Depth, sa.Agent
	}
	return h, nil
}

// Open locks and opens an existing session, given its id, a unique prefix
// of it, or the path of its file. A torn last line is cut off first and
// reported in the session's warnings (FileSession.Warnings).
func (s *JSONLStore) Open(ctx context.Context, id string, opts *LockOptions) (Session, error) {
	path, err := s.Resolve(id)
	if err != nil {
		return nil, err
	}
	id = idFromPath(path)
	lock, err := AcquireLock(ctx, path, id, opts)
	if err != nil {
		return nil, err
	}
	fs, err := openFileSession(path, Header{ID: id}, false, s.Sync, lock)
	if err != nil {
		lock.Release()
		return nil, err
	}
	return fs, nil
}

// Load reads a session without locking it.
func (s *JSONLStore) Load(ctx context.Context, id string) (*Transcript, error) {
	path, err := s.Resolve(id)
	if err != nil {
		return nil, err
	}
	return LoadFile(path)
}

// Lock takes a session's write lock.
func (s *JSONLStore) Lock(ctx context.Context, id string, opts *LockOptions) (Lock, error) {
	path, err := s.Resolve(id)
	if err != nil {
		return nil, err
	}
	return AcquireLock(ctx, path, idFromPath(path), opts)
}

// Resolve returns the file of a session given its id, a unique prefix of
// its id, or a path to the file.
func (s *JSONLStore) Resolve(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("find session: no id given")
	}
	if strings.ContainsRune(id, filepath.Separator) || strings.HasSuffix(id, ".jsonl") {
		if _, err := os.Stat(id); err != nil {
			return "", fmt.Errorf("find session %s: %w", id, ErrNotFound)
		}
		return id, nil
	}
	if p, ok := s.paths.Load(id); ok {
		if _, err := os.Stat(p.(string)); err == nil {
			return p.(string), nil
		}
		s.paths.CompareAndDelete(id, p) // moved or deleted by another process
	}
	files, err := filepath.Glob(filepath.Join(s.Dir, "*", "*_"+globEscape(id)+"*.jsonl"))
	if err != nil {
		return "", fmt.Errorf("find session %s: %w", id, err)
	}
	var match []string
	for _, f := range files {
		sid := idFromPath(f)
		if sid == id {
			s.paths.Store(id, f)
			return f, nil
		}
		if strings.HasPrefix(sid, id) {
			match = append(match, f)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("find session %s in %s: %w", id, s.Dir, ErrNotFound)
	case 1:
		return match[0], nil
	}
	return "", fmt.Errorf("find session %s: the prefix matches %d sessions; give more of the id", id, len(match))
}

func globEscape(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`).Replace(s)
}

// idFromPath reads the session id from a file name "<time>_<id>.jsonl".
func idFromPath(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if i := strings.LastIndexByte(base, '_'); i >= 0 {
		return base[i+1:]
	}
	return base
}

// List describes the sessions of cwd ("" for every directory), the most
// recently updated first. It reads the summaries cached beside the
// transcripts, and only what changed since they were made (see
// summaryFile).
func (s *JSONLStore) List(ctx context.Context, cwd string) ([]Info, error) {
	pattern := filepath.Join(s.Dir, "*", "*.jsonl")
	if cwd != "" {
		pattern = filepath.Join(s.Dir, globEscape(CwdSlug(cwd)), "*.jsonl")
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	byDir := map[string][]string{}
	var dirs []string
	for _, f := range files {
		d := filepath.Dir(f)
		if byDir[d] == nil {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], f)
	}
	out := make([]Info, 0, len(files))
	for _, d := range dirs {
		infos, err := listDir(ctx, d, byDir[d])
		if err != nil {
			return nil, err
		}
		out = append(out, infos...)
	}
	slices.SortStableFunc(out, func(a, b Info) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out, nil
}

// Latest returns the most recently updated session of cwd, for
// `--continue`; ErrNotFound when it has none. From a JSONLStore its totals
// (Stats) are zero unless a listing cached them: finding it reads no
// transcript whole.
func Latest(ctx context.Context, s Store, cwd string) (Info, error) {
	if js, ok := s.(*JSONLStore); ok && cwd != "" {
		return js.latest(ctx, cwd)
	}
	list, err := s.List(ctx, cwd)
	if err != nil {
		return Info{}, err
	}
	for _, info := range list {
		if info.Err == nil {
			return info, nil
		}
	}
	return Info{}, fmt.Errorf("no session for %s: %w", cwd, ErrNotFound)
}

// Fork writes a new session holding the path from the root to leafID of
// session id, with the same entry ids, and returns its id. Its header
// names the source file as parentSession.
func (s *JSONLStore) Fork(ctx context.Context, id, leafID string, opts CreateOptions) (string, error) {
	src, err := s.Resolve(id)
	if err != nil {
		return "", err
	}
	t, err := LoadFile(src)
	if err != nil {
		return "", err
	}
	entries, err := ForkEntries(t, leafID, &opts)
	if err != nil {
		return "", err
	}
	h, path, err := s.newHeader(opts)
	if err != nil {
		return "", err
	}
	if abs, err := filepath.Abs(src); err == nil {
		src = abs
	}
	h.ParentSession = src
	data, err := encodeTranscript(&h, entries)
	if err != nil {
		return "", fmt.Errorf("fork session %s: %w", t.Header.ID, err)
	}
	if _, err := os.Stat(path); err == nil {
		return "", fmt.Errorf("fork session %s: session %s already exists", t.Header.ID, h.ID)
	}
	if err := writeFileAtomic(path, data, s.Sync != SyncNever); err != nil {
		return "", fmt.Errorf("fork session %s: %w", t.Header.ID, err)
	}
	s.paths.Store(h.ID, path)
	return h.ID, nil
}

// ForkEntries returns copies of the entries on the path from the root to
// leafID ("" for the leaf) of t, what a fork of t at leafID holds, and
// gives opts the source's working directory unless it names one.
func ForkEntries(t *Transcript, leafID string, opts *CreateOptions) ([]Entry, error) {
	if leafID == "" {
		leafID = t.Leaf
	}
	if _, ok := t.Entry(leafID); !ok {
		return nil, fmt.Errorf("fork session %s: no entry %q", t.Header.ID, leafID)
	}
	if opts.Cwd == "" {
		opts.Cwd = t.Header.Cwd
	}
	path := t.Path(leafID)
	entries := make([]Entry, len(path))
	for i, e := range path {
		entries[i] = *e
	}
	return entries, nil
}

// Repair drops the corrupt lines of a session's file under its lock, after
// a backup. See RepairFile.
func (s *JSONLStore) Repair(ctx context.Context, id string, opts *LockOptions) (*FileRepair, error) {
	path, err := s.Resolve(id)
	if err != nil {
		return nil, err
	}
	lock, err := AcquireLock(ctx, path, idFromPath(path), opts)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	return RepairFile(path)
}

var errNoHeader = errors.New("the first line is not a session header; the file cannot be repaired automatically")
