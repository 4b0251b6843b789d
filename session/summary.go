package session

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Listing sessions needs each one's header and totals, and computing the
// totals means reading every entry. So each directory of transcripts keeps
// a small cache of them, summaryFile: one record per transcript, with the
// size and modification time it was computed at. A record whose file
// changed is stale; when the file only grew (the bytes before the end
// already summed up are the same), only the new lines are read, so a
// listing after a run costs what that run appended. The cache is only
// ever replaced whole (a temporary file and a rename), and a missing or
// unreadable one is rebuilt from the transcripts.

// summaryFile is the name of the cache in each directory of transcripts.
const summaryFile = ".summaries.json"

// summaryVersion changes when a record's meaning does; other versions are
// ignored and rebuilt.
const summaryVersion = 1

// summaryTail is how many bytes before the end of what a record summed
// up are kept as a hash, to tell an append from a rewrite.
const summaryTail = 4096

type summaryCache struct {
	Version int                     `json:"version"`
	Files   map[string]*fileSummary `json:"files"`
}

// fileSummary is the cached listing of one transcript.
type fileSummary struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime"`  // Unix nanoseconds
	Summed  int64  `json:"summed"` // bytes of whole lines the stats cover
	Tail    string `json:"tail"`   // hash of the summaryTail bytes before Summed
	Header  Header `json:"header"`
	Stats   Stats  `json:"stats"`
	// Thinking says whether a line summed up is a thinking level change:
	// when none is, a session read from its tail need not search those
	// bytes for one (see readTail).
	Thinking bool `json:"thinking,omitempty"`
}

func readSummaries(dir string) *summaryCache {
	c := &summaryCache{}
	if data, err := os.ReadFile(filepath.Join(dir, summaryFile)); err == nil {
		_ = json.Unmarshal(data, c) // a damaged cache is rebuilt
	}
	if c.Version != summaryVersion || c.Files == nil {
		c = &summaryCache{Version: summaryVersion, Files: map[string]*fileSummary{}}
	}
	return c
}

func writeSummaries(dir string, c *summaryCache) error {
	data, err := llm.MarshalJSON(c)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, summaryFile), data, false)
}

// errNotSummed says a transcript has no usable cached record.
var errNotSummed = errors.New("no current summary")

// summarize returns the listing of the transcript at path, from the
// cached record when it is current, and the record to cache (nil when
// the file cannot be read). Without whole, a file it would have to read
// whole is errNotSummed.
func summarize(path string, cached *fileSummary, whole bool) (Info, *fileSummary, error) {
	info := Info{ID: idFromPath(path), Path: path}
	f, err := os.Open(path)
	if err != nil {
		return info, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return info, nil, err
	}
	info.Updated = st.ModTime()
	size, mtime := st.Size(), st.ModTime().UnixNano()
	rec := cached
	switch {
	case rec != nil && rec.Size == size && rec.ModTime == mtime:
	case rec != nil && size > rec.Summed && rec.Header.Version == CurrentVersion && rec.Tail == tailHash(f, rec.Summed):
		if rec, err = addLines(f, rec, size); err != nil {
			rec = nil // not an append after all: read it whole
		}
	default:
		rec = nil
	}
	if rec == nil && !whole {
		return info, nil, errNotSummed
	}
	if rec == nil {
		if rec, err = summarizeFile(path, f, size); err != nil {
			return info, nil, err
		}
	}
	rec.Size, rec.ModTime = size, mtime
	info.ID, info.Cwd, info.ParentSession = rec.Header.ID, rec.Header.Cwd, rec.Header.ParentSession
	info.Created = parseTime(rec.Header.Timestamp)
	info.Stats = rec.Stats
	return info, rec, nil
}

// summarizeFile sums up the first size bytes of f: line by line when it
// can, else through a full load, which says what is wrong or migrates an
// older version.
func summarizeFile(path string, f *os.File, size int64) (*fileSummary, error) {
	if rec, ok := sumLines(f, size); ok {
		return rec, nil
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("load session: %w", err)
	}
	t, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	complete, _ := splitTorn(data)
	rec := &fileSummary{Summed: int64(len(complete)), Header: t.Header, Stats: t.Stats()}
	for i := range t.Entries {
		rec.Thinking = rec.Thinking || t.Entries[i].Type == EntryThinkingLevelChange
	}
	// The version the file has, not the one it migrates to in memory:
	// only lines of the current version are summed up one by one.
	rec.Header.Version = parseVersion(complete)
	rec.Tail = tailHash(bytes.NewReader(complete), rec.Summed)
	return rec, nil
}

// sumLines sums up a transcript of the current version holding one line
// at a time. ok is false for anything a full load must judge: no header,
// another version, a line that is not an entry.
func sumLines(f *os.File, size int64) (rec *fileSummary, ok bool) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	rec = &fileSummary{}
	header := false
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err == io.EOF {
			break // a torn last line, or none: not summed up
		}
		if err != nil {
			return nil, false
		}
		rec.Summed += int64(len(line))
		line = bytes.TrimSpace(line)
		switch {
		case len(line) == 0:
		case !header:
			if json.Unmarshal(line, &rec.Header) != nil || rec.Header.Type != "session" || rec.Header.Version != CurrentVersion {
				return nil, false
			}
			header = true
		default:
			e, err := decodeEntry(line)
			if err != nil || e.Type == "" || e.ID == "" {
				return nil, false
			}
			rec.Stats.count(&e)
			rec.Thinking = rec.Thinking || e.Type == EntryThinkingLevelChange
		}
	}
	if !header {
		return nil, false
	}
	rec.Tail = tailHash(f, rec.Summed)
	return rec, true
}

// addLines sums up the whole lines of f between rec.Summed and size into
// a copy of rec. A line that is not an entry is an error.
func addLines(f *os.File, rec *fileSummary, size int64) (*fileSummary, error) {
	data := make([]byte, size-rec.Summed)
	if _, err := f.ReadAt(data, rec.Summed); err != nil && err != io.EOF {
		return nil, err
	}
	complete, _ := splitTorn(data)
	out := *rec
	for off := 0; off < len(complete); {
		end := off + bytes.IndexByte(complete[off:], '\n')
		line := bytes.TrimSpace(complete[off:end])
		off = end + 1
		if len(line) == 0 {
			continue
		}
		e, err := decodeEntry(line)
		if err != nil || e.Type == "" || e.ID == "" {
			return nil, fmt.Errorf("not an appended entry")
		}
		out.Stats.count(&e)
		out.Thinking = out.Thinking || e.Type == EntryThinkingLevelChange
	}
	out.Summed += int64(len(complete))
	out.Tail = tailHash(f, out.Summed)
	return &out, nil
}

// latest finds the most recently updated session of cwd for Latest
// without reading whole transcripts: one with a cached summary is brought
// up to date as a listing would; one without is taken on its header,
// with no totals (listing it fills them in). Files that cannot be read
// are passed over, as Latest passes over listed errors.
func (s *JSONLStore) latest(ctx context.Context, cwd string) (Info, error) {
	files, err := filepath.Glob(filepath.Join(s.Dir, globEscape(CwdSlug(cwd)), "*.jsonl"))
	if err != nil {
		return Info{}, fmt.Errorf("list sessions: %w", err)
	}
	type cand struct {
		path string
		mod  time.Time
	}
	cands := make([]cand, 0, len(files))
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			cands = append(cands, cand{f, st.ModTime()})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return cmp.Compare(idFromPath(b.path), idFromPath(a.path))
	})
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return Info{}, err
		}
		dir, name := filepath.Dir(c.path), filepath.Base(c.path)
		cache := readSummaries(dir)
		old := cache.Files[name]
		info, rec, err := summarize(c.path, old, false)
		switch {
		case err == nil:
			if old == nil || *rec != *old {
				cache.Files[name] = rec
				_ = writeSummaries(dir, cache)
			}
			return info, nil
		case errors.Is(err, errNotSummed):
			if h, ok := headerOf(c.path); ok {
				info.ID, info.Cwd, info.ParentSession = h.ID, h.Cwd, h.ParentSession
				info.Created = parseTime(h.Timestamp)
				return info, nil
			}
		}
	}
	return Info{}, fmt.Errorf("no session for %s: %w", cwd, ErrNotFound)
}

// headerOf reads the header line of a transcript, of any version.
func headerOf(path string) (Header, bool) {
	var h Header
	f, err := os.Open(path)
	if err != nil {
		return h, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadSlice('\n')
	if err != nil {
		return h, false
	}
	if json.Unmarshal(line, &h) != nil || h.Type != "session" {
		return h, false
	}
	return h, true
}

// noThinkingBefore returns how many leading bytes of the transcript at
// path its cached summary shows to hold no thinking level change (0 when
// it shows nothing: no record, a record of another file, one with a
// thinking change).
func noThinkingBefore(path string, r io.ReaderAt, size int64) int64 {
	rec := readSummaries(filepath.Dir(path)).Files[filepath.Base(path)]
	if rec == nil || rec.Thinking || rec.Header.Version != CurrentVersion || rec.Summed > size ||
		rec.Tail != tailHash(r, rec.Summed) {
		return 0
	}
	return rec.Summed
}

// tailHash hashes the summaryTail bytes before end.
func tailHash(r io.ReaderAt, end int64) string {
	from := max(0, end-summaryTail)
	buf := make([]byte, end-from)
	if _, err := r.ReadAt(buf, from); err != nil && err != io.EOF {
		return ""
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:16])
}

// listDir lists the transcript files (all in dir), through and into its
// summary cache.
func listDir(ctx context.Context, dir string, files []string) ([]Info, error) {
	cache := readSummaries(dir)
	changed := false
	seen := make(map[string]bool, len(files))
	out := make([]Info, 0, len(files))
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := filepath.Base(f)
		seen[name] = true
		old := cache.Files[name]
		info, rec, err := summarize(f, old, true)
		if err != nil {
			info.Err = err
			if old != nil {
				delete(cache.Files, name)
				changed = true
			}
			out = append(out, info)
			continue
		}
		if old == nil || *rec != *old {
			cache.Files[name] = rec
			changed = true
		}
		out = append(out, info)
	}
	for name := range cache.Files {
		if !seen[name] {
			delete(cache.Files, name)
			changed = true
		}
	}
	if changed {
		_ = writeSummaries(dir, cache) // a cache that cannot be written is rebuilt next time
	}
	return out, nil
}

// Info describes one session as List would, from the summary cached
// beside its transcript, reading only what was appended since (the
// transcript whole only when no summary of it is current). Its Err is
// not set: a file that cannot be read is the error.
func (s *JSONLStore) Info(ctx context.Context, id string) (Info, error) {
	path, err := s.Resolve(id)
	if err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	dir, name := filepath.Dir(path), filepath.Base(path)
	cache := readSummaries(dir)
	old := cache.Files[name]
	info, rec, err := summarize(path, old, true)
	if err != nil {
		return Info{}, fmt.Errorf("read session %s: %w", id, err)
	}
	if old == nil || *rec != *old {
		// Another writer of the cache may win the race; a record lost so is
		// summed up again next time.
		cache.Files[name] = rec
		_ = writeSummaries(dir, cache)
	}
	return info, nil
}
