package session

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// listOne lists the only session of the store.
func listOne(t *testing.T, st *JSONLStore) Info {
	t.Helper()
	infos, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 {
		t.Fatalf("listed %d sessions, want 1", len(infos))
	}
	return infos[0]
}

// TestListUsesSummaries: a listing reads a transcript only when it
// changed, only its new lines when it grew, and all of it again when it
// was rewritten; a missing or damaged cache is rebuilt.
func TestListUsesSummaries(t *testing.T) {
	ctx := context.Background()
	st := &JSONLStore{Dir: t.TempDir(), Sync: SyncNever}
	s, err := st.Create(ctx, CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	user := func(text string) Entry {
		return MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}})
	}
	answer := MessageEntry(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("ok ", 2000))},
		Usage: &llm.Usage{Total: 10, Cost: llm.Cost{Total: 0.5}}})
	for _, e := range []Entry{user("first question"), answer} {
		if _, err := s.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	path := s.(*FileSession).Path()
	info := listOne(t, st)
	if info.Messages != 2 || info.Tokens != 10 || info.Title != "first question" {
		t.Fatalf("listed %+v", info.Stats)
	}
	cache := filepath.Join(filepath.Dir(path), summaryFile)
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no summary cache beside the transcript: %v", err)
	}

	// Same size, same time: the cached record stands, the file is not
	// read (a change that keeps both shows it).
	data, _ := os.ReadFile(path)
	st0, _ := os.Stat(path)
	os.WriteFile(path, bytes.Replace(data, []byte("first question"), []byte("other question"), 1), 0o600)
	os.Chtimes(path, st0.ModTime(), st0.ModTime())
	if got := listOne(t, st).Title; got != "first question" {
		t.Fatalf("title %q: a transcript whose size and time did not change was read again", got)
	}
	os.WriteFile(path, data, 0o600)
	os.Chtimes(path, st0.ModTime(), st0.ModTime())

	// Appended: only the new lines are read. A damaged first line that
	// the cache hides shows it: a full read would refuse the file.
	for _, e := range []Entry{user("second"), answer} {
		if _, err := s.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	grown, _ := os.ReadFile(path)
	hidden := append([]byte(nil), grown...)
	hidden[1] = '!' // the header, far before the hashed tail
	os.WriteFile(path, hidden, 0o600)
	info = listOne(t, st)
	if info.Err != nil || info.Messages != 4 || info.Tokens != 20 || info.Cost != 1 || info.Title != "first question" {
		t.Fatalf("after an append: %+v, err %v", info.Stats, info.Err)
	}
	os.WriteFile(path, grown, 0o600)

	// Rewritten (a repair, a migration): read whole again.
	// Its first message and its last timestamp change, and a line is
	// added: read line by line from the old end, the title would stay.
	rewritten := bytes.Replace(grown, []byte("first question"), []byte("fixed question"), 1)
	last := grown[bytes.LastIndexByte(grown[:len(grown)-1], '\n')+1:]
	ts := bytes.LastIndex(rewritten, []byte(`"timestamp":`)) + len(`"timestamp":`)
	rewritten[ts] = '1' + (rewritten[ts]-'0'+1)%9 // another digit, still a number
	rewritten = append(rewritten, bytes.Replace(last, []byte(`"id":"`+lastID(t, grown)+`"`), []byte(`"id":"fffffff0"`), 1)...)
	os.WriteFile(path, rewritten, 0o600)
	if info := listOne(t, st); info.Messages != 5 || info.Title != "fixed question" || info.Err != nil {
		t.Fatalf("after a rewrite: %+v, err %v", info.Stats, info.Err)
	}

	// A damaged cache is rebuilt; so is a missing one.
	os.WriteFile(cache, []byte("{not json"), 0o600)
	if info := listOne(t, st); info.Messages != 5 {
		t.Fatalf("with a damaged cache: %+v", info.Stats)
	}
	os.Remove(cache)
	if info := listOne(t, st); info.Messages != 5 {
		t.Fatalf("without a cache: %+v", info.Stats)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("the cache was not written again: %v", err)
	}

	// A corrupt transcript is listed with its error, and not cached.
	os.WriteFile(path, append([]byte("{oops\n"), grown...), 0o600)
	if info := listOne(t, st); info.Err == nil {
		t.Fatal("a corrupt transcript was listed without its error")
	}
}

func lastID(t *testing.T, data []byte) string {
	tr, err := Parse("", data)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Leaf
}

// TestListSummariesMatchFullLoad: over random transcripts grown by random
// appends (some torn, then completed), the listed totals are always those
// of a full load of the file.
func TestListSummariesMatchFullLoad(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 3))
		dir := t.TempDir()
		st := &JSONLStore{Dir: dir}
		sub := filepath.Join(dir, CwdSlug("/p"))
		os.MkdirAll(sub, 0o700)
		path := filepath.Join(sub, "2026-01-01T00-00-00-000Z_prop.jsonl")
		data := randomTranscript(r, 10+r.IntN(40), false)
		lines := bytes.SplitAfter(data, []byte{'\n'})
		cut := 1 + r.IntN(len(lines)-1)
		os.WriteFile(path, bytes.Join(lines[:cut], nil), 0o600)
		for cut < len(lines) {
			next := min(len(lines), cut+1+r.IntN(5))
			chunk := bytes.Join(lines[cut:next], nil)
			if r.IntN(3) == 0 && len(chunk) > 2 {
				// A torn append first, completed later.
				f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				f.Write(chunk[:len(chunk)/2])
				f.Close()
				check(t, st, path, seed)
				f, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				f.Write(chunk[len(chunk)/2:])
				f.Close()
			} else {
				f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				f.Write(chunk)
				f.Close()
			}
			// A later time, as a real append gives.
			later := time.Unix(int64(1_700_000_000+cut), 0)
			os.Chtimes(path, later, later)
			cut = next
			check(t, st, path, seed)
		}
	}
}

func check(t *testing.T, st *JSONLStore, path string, seed uint64) {
	t.Helper()
	full, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info := listOne(t, st)
	if info.Err != nil {
		t.Fatalf("seed %d: %v", seed, info.Err)
	}
	if diff := cmp.Diff(full.Stats(), info.Stats); diff != "" {
		t.Fatalf("seed %d: listed totals differ from a full load (-full +listed):\n%s", seed, diff)
	}
}

// BenchmarkList200 lists 200 sessions of 400 entries with a current cache
// and, for comparison, with none (every transcript read whole).
func BenchmarkList200(b *testing.B) {
	dir := b.TempDir()
	st := &JSONLStore{Dir: dir}
	sub := filepath.Join(dir, CwdSlug("/bench"))
	os.MkdirAll(sub, 0o700)
	data, err := os.ReadFile(benchTranscript(b, 400))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		os.WriteFile(filepath.Join(sub, "2026-01-01T00-00-00-000Z_s"+strconv.Itoa(i)+".jsonl"), data, 0o600)
	}
	ctx := context.Background()
	for _, cached := range []bool{true, false} {
		name := "cached"
		if !cached {
			name = "rebuilt"
		}
		b.Run(name, func(b *testing.B) {
			if _, err := st.List(ctx, ""); err != nil { // the cache is current
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if !cached {
					os.Remove(filepath.Join(sub, summaryFile))
				}
				if infos, err := st.List(ctx, ""); err != nil || len(infos) != 200 {
					b.Fatal(len(infos), err)
				}
			}
		})
	}
}

// TestLatestReadsNoTranscriptWhole: Latest takes the most recent session
// of the directory on its header (passing over one whose header is bad)
// until a listing cached its totals, which it then keeps current.
func TestLatestReadsNoTranscriptWhole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := &JSONLStore{Dir: dir}
	sub := filepath.Join(dir, CwdSlug("/p"))
	os.MkdirAll(sub, 0o700)
	r := rand.New(rand.NewPCG(5, 5))
	older := filepath.Join(sub, "2026-01-01T00-00-00-000Z_older.jsonl")
	newer := filepath.Join(sub, "2026-01-02T00-00-00-000Z_newer.jsonl")
	os.WriteFile(older, randomTranscript(r, 20, false), 0o600)
	// A bad line after the header is not read: the newer one is taken.
	os.WriteFile(newer, append(randomTranscript(r, 20, false), "{oops\n"...), 0o600)
	t0 := time.Now()
	os.Chtimes(older, t0.Add(-time.Hour), t0.Add(-time.Hour))
	in, err := Latest(ctx, st, "/p")
	if err != nil || in.Path != newer || in.Messages != 0 || in.Cwd != "/p" {
		t.Fatalf("latest %+v, %v; want the newer session, taken on its header", in, err)
	}
	// A bad header is passed over.
	os.WriteFile(newer, []byte("{oops\n"), 0o600)
	if in, err := Latest(ctx, st, "/p"); err != nil || in.Path != older {
		t.Fatalf("latest %+v, %v; want the older session", in, err)
	}
	// Listed, the totals come from the cache, kept current as it grows.
	os.Remove(newer)
	if _, err := st.List(ctx, "/p"); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(older, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"type":"message","id":"7f000000","parentId":null,"timestamp":"x","message":{"role":"user","content":[{"type":"text","text":"more"}],"timestamp":1}}` + "\n")
	f.Close()
	full, _ := LoadFile(older)
	in, err = Latest(ctx, st, "/p")
	if err != nil || in.Stats != full.Stats() {
		t.Fatalf("latest %+v, %v; want the totals %+v", in.Stats, err, full.Stats())
	}
	if rec := readSummaries(sub).Files[filepath.Base(older)]; rec == nil || rec.Stats != full.Stats() {
		t.Fatalf("the cache was not brought up to date: %+v", rec)
	}
}

// Info describes one session as a listing does and as its loaded
// transcript's Stats say, before and after more is appended, without
// dropping the cached records of the directory's other sessions.
func TestInfoOfOneSession(t *testing.T) {
	ctx := context.Background()
	st := &JSONLStore{Dir: t.TempDir(), Sync: SyncNever}
	other, err := st.Create(ctx, CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(ctx, MessageEntry(llm.UserText("the other one"))); err != nil {
		t.Fatal(err)
	}
	s, err := st.Create(ctx, CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.List(ctx, ""); err != nil { // caches both records
		t.Fatal(err)
	}
	for round, text := range []string{"first question", "second question"} {
		for _, e := range []Entry{MessageEntry(llm.UserText(text)), MessageEntry(llm.Message{Role: llm.RoleAssistant,
			Content: []llm.Content{llm.Text("answer")}, Usage: &llm.Usage{Total: 7}})} {
			if _, err := s.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		info, err := st.Info(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		tr, err := st.Load(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tr.Stats(), info.Stats); diff != "" || info.ID != s.ID() || info.Cwd != "/w" || info.Messages != 2*(round+1) {
			t.Fatalf("round %d: Info %+v; against Load's Stats (-want +got):\n%s", round, info, diff)
		}
	}
	c := readSummaries(filepath.Dir(s.(*FileSession).Path()))
	if len(c.Files) != 2 {
		t.Fatalf("the cache holds %d records after Info, want both sessions'", len(c.Files))
	}
	if _, err := st.Info(ctx, "no-such-session"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Info of no session: %v", err)
	}
}
