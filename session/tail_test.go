package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// smallTailChunks makes readTail read a few lines at a time, so that
// small transcripts go through every step of reading back.
func smallTailChunks(t testing.TB) {
	first, most, minSize := tailFirstChunk, tailMaxChunk, tailMinSize
	tailFirstChunk, tailMaxChunk, tailMinSize = 96, 512, 0
	t.Cleanup(func() { tailFirstChunk, tailMaxChunk, tailMinSize = first, most, minSize })
}

// randomTranscript writes a random tree: turns with tool calls whose ids
// repeat, branches from earlier entries, compactions keeping an entry of
// the path (now and then one off it or none), truncations by target and
// by call id, snips, model and thinking changes, labels, summaries; with
// broken set, also the damage a hand edit does (a missing parent, an id
// used twice, a cycle).
func randomTranscript(r *rand.Rand, n int, broken bool) []byte {
	h := Header{Type: "session", Version: CurrentVersion, ID: "prop", Timestamp: "2026-01-01T00:00:00.000Z", Cwd: "/p"}
	var entries []Entry
	parent := map[string]string{}
	leaf := ""
	path := func() []string {
		var p []string
		for id, k := leaf, 0; id != "" && k <= len(entries); id, k = parent[id], k+1 {
			p = append(p, id)
		}
		return p // leaf first
	}
	var results []string // entry ids of tool results
	add := func(e Entry) {
		e.ID = fmt.Sprintf("%08x", len(entries)+1)
		e.ParentID = leaf
		e.Timestamp = fmt.Sprintf("2026-01-01T00:%02d:%02d.000Z", len(entries)/60%60, len(entries)%60)
		entries = append(entries, e)
		parent[e.ID] = e.ParentID
		leaf = e.ID
	}
	call := func() string { return "call" + strconv.Itoa(r.IntN(4)) } // ids repeat across turns
	for len(entries) < n {
		switch k := r.IntN(100); {
		case k < 25:
			add(MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("u" + strconv.Itoa(len(entries)))}, Timestamp: int64(len(entries))}))
		case k < 45:
			id := call()
			m := llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonToolUse, Timestamp: int64(len(entries)),
				Content: []llm.Content{llm.Text("a"), llm.ToolCall(id, "echo", json.RawMessage(`{}`))}}
			if r.IntN(10) > 0 {
				m.Provider, m.Model = "p", "m"+strconv.Itoa(r.IntN(3))
				m.Usage = &llm.Usage{Total: r.IntN(1000), Cost: llm.Cost{Total: 0.1 * float64(r.IntN(7))}}
			}
			add(MessageEntry(m))
			add(MessageEntry(llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "echo",
				Content: []llm.Content{llm.Text("result " + strconv.Itoa(len(entries)))}, Timestamp: int64(len(entries))}))
			results = append(results, leaf)
		case k < 55 && leaf != "":
			p := path()
			kept := p[r.IntN(len(p))]
			switch r.IntN(12) {
			case 0:
				kept = "" // nothing kept
			case 1:
				kept = fmt.Sprintf("%08x", r.IntN(len(entries))+1) // perhaps on another branch
			}
			summary := "summary"
			if r.IntN(5) == 0 {
				summary = ""
			}
			add(CompactionEntry(summary, kept, 100))
		case k < 63 && len(results) > 0:
			target := results[r.IntN(len(results))]
			var callID string
			for i := range entries {
				if entries[i].ID == target {
					callID = entries[i].Message.ToolCallID
				}
			}
			switch r.IntN(4) {
			case 0:
				target = "" // an older file: the latest result of the call id
			case 1:
				target = "ffffffff" // names nothing
			}
			add(TruncationEntry(target, callID, []llm.Content{llm.Text("[truncated]")}))
		case k < 68:
			p := path()
			if len(p) > 3 {
				i := 1 + r.IntN(len(p)-2)
				j := i + 1 + r.IntN(len(p)-i-1)
				add(SnipEntry(SnipData{FirstDroppedEntryID: p[j], FirstKeptEntryID: p[i], Note: "[snipped]"}))
			}
		case k < 72:
			add(ModelChangeEntry("q", "m"+strconv.Itoa(r.IntN(3))))
		case k < 74:
			add(ThinkingLevelEntry(llm.ThinkingLevel([]string{"low", "high"}[r.IntN(2)])))
		case k < 77:
			add(LabelEntry(leaf, "l"))
		case k < 80:
			add(Entry{Type: EntryCustomMessage, CustomType: "x", Content: []llm.Content{llm.Text("custom")}})
		case k < 82:
			add(Entry{Type: EntryBranchSummary, FromID: leaf, Summary: "gone"})
		case k < 90 && len(entries) > 0:
			// Branch: continue from an earlier entry (now and then a root).
			if r.IntN(8) == 0 {
				leaf = ""
			} else {
				leaf = entries[r.IntN(len(entries))].ID
			}
		default:
			add(MessageEntry(llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonStop, Provider: "p", Model: "m",
				Content: []llm.Content{llm.Text("done")}, Timestamp: int64(len(entries))}))
		}
	}
	if broken && len(entries) > 2 {
		i := r.IntN(len(entries))
		switch r.IntN(3) {
		case 0:
			entries[i].ParentID = "deadbeef" // a parent not in the file
		case 1:
			entries[i].ID = entries[r.IntN(len(entries))].ID // an id used twice
		case 2:
			j := i + r.IntN(len(entries)-i) // a cycle through i
			entries[i].ParentID = entries[j].ID
		}
	}
	data, err := encodeTranscript(&h, entries)
	if err != nil {
		panic(err)
	}
	return data
}

// TestTailContextMatchesFull is the property that makes a tail read safe:
// for random trees, whenever readTail accepts a file, the context it gives
// is the one the whole file gives, field for field.
func TestTailContextMatchesFull(t *testing.T) {
	smallTailChunks(t)
	tails := 0
	const runs = 3000
	for seed := range uint64(runs) {
		r := rand.New(rand.NewPCG(seed, 20))
		data := randomTranscript(r, 5+r.IntN(120), seed%5 == 0)
		full, err := Parse("prop.jsonl", data)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		tail, ok, err := readTail(bytes.NewReader(data), int64(len(data)), 0)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !ok {
			continue
		}
		tails++
		if tail.Leaf != full.Leaf || tail.Header != full.Header {
			t.Fatalf("seed %d: leaf %s, header %+v; the full load has %s, %+v", seed, tail.Leaf, tail.Header, full.Leaf, full.Header)
		}
		if diff := cmp.Diff(full.Context(""), tail.Context("")); diff != "" {
			t.Fatalf("seed %d: the tail's context differs from the full load's (-full +tail):\n%s\n%s", seed, diff, data)
		}
	}
	// The property says nothing if the tail is never taken.
	if tails < runs/4 {
		t.Fatalf("only %d of %d transcripts were read from the tail", tails, runs)
	}
	t.Logf("%d of %d transcripts read from the tail", tails, runs)
}

// TestTailSessionMatchesFull opens random transcripts the way a continued
// run does and checks the session's context against a full load, also
// after appends, after going back to an entry of the current path, and
// after a branch elsewhere (which reads the whole file).
func TestTailSessionMatchesFull(t *testing.T) {
	smallTailChunks(t)
	ctx := context.Background()
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 21))
		data := randomTranscript(r, 20+r.IntN(100), false)
		if seed%4 == 1 {
			// A thinking change at the root, which the listing then
			// records as such.
			data = withRootThinking(data)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, CwdSlug("/p"), "2026-01-01T00-00-00-000Z_s.jsonl")
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st := &JSONLStore{Dir: dir, Sync: SyncNever}
		if seed%2 == 1 {
			// The summary cache then tells where no thinking change is.
			if _, err := st.List(ctx, ""); err != nil {
				t.Fatal(err)
			}
			if seed%4 == 3 {
				// ... until the file is rewritten, with one where none was.
				data = withRootThinking(data)
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		sess, err := st.Open(ctx, path, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		fs := sess.(*FileSession)
		check := func(what string) {
			t.Helper()
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			full, err := Parse(path, got)
			if err != nil {
				t.Fatal(err)
			}
			if err := full.setLeaf(fs.Leaf()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(full.Context(""), fs.Context()); diff != "" {
				t.Fatalf("seed %d, %s (partial %v): context differs (-full +session):\n%s", seed, what, fs.t.partial, diff)
			}
		}
		check("opened")
		leaf := fs.Leaf()
		if _, err := fs.Append(ctx, MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("more")}})); err != nil {
			t.Fatal(err)
		}
		check("appended")
		if err := fs.Branch(leaf); err != nil {
			t.Fatal(err)
		}
		check("back at the leaf it opened at")
		other := fmt.Sprintf("%08x", 1+r.IntN(10))
		if err := fs.Branch(other); err != nil {
			t.Fatal(err)
		}
		if fs.t.partial {
			t.Fatalf("seed %d: a branch to %s left the session on its tail", seed, other)
		}
		check("branched to " + other)
		if got := len(fs.Transcript().Entries); got != bytes.Count(data, []byte{'\n'}) {
			t.Fatalf("seed %d: the transcript has %d entries, want every one of the file", seed, got)
		}
		if err := sess.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// withRootThinking puts a thinking level change before the first entry,
// as its parent.
func withRootThinking(data []byte) []byte {
	lines := bytes.SplitAfter(data, []byte{'\n'})
	te := `{"type":"thinking_level_change","id":"7e000000","parentId":null,"timestamp":"x","thinkingLevel":"high"}` + "\n"
	data = bytes.Join(append(lines[:1:1], append([][]byte{[]byte(te)}, lines[1:]...)...), nil)
	return bytes.Replace(data, []byte(`"id":"00000001","parentId":null`), []byte(`"id":"00000001","parentId":"7e000000"`), 1)
}

// setLeaf moves a loaded transcript's leaf, as Branch does.
func (t *Transcript) setLeaf(id string) error {
	if _, ok := t.indexOf(id); !ok && id != "" {
		return fmt.Errorf("no entry %s", id)
	}
	t.Leaf = id
	return nil
}

// TestTailFallsBack pins the cases readTail must hand to a full load.
func TestTailFallsBack(t *testing.T) {
	smallTailChunks(t)
	hdr := `{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n"
	user := func(id, parent string) string {
		p := "null"
		if parent != "" {
			p = strconv.Quote(parent)
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"` + id + `"}],"timestamp":1}}` + "\n"
	}
	asst := `{"type":"message","id":"m","parentId":"k","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[],"model":"m","provider":"p","timestamp":2}}` + "\n"
	comp := `{"type":"compaction","id":"c","parentId":"m","timestamp":"2026-01-01T00:00:00.000Z","summary":"s","firstKeptEntryId":"k"}` + "\n"
	pad := ""
	for i := range 20 {
		pad += user("p"+strconv.Itoa(i), "")
	}
	good := hdr + pad + user("k", "") + asst + comp + user("z", "c")
	if _, ok, _ := readTail(bytes.NewReader([]byte(good)), int64(len(good)), 0); !ok {
		t.Fatal("a compacted transcript was not read from its tail")
	}
	for name, data := range map[string]string{
		"old version":        `{"type":"session","version":2,"id":"x"}` + "\n" + pad + user("k", "") + asst + comp + user("z", "c"),
		"missing parent":     hdr + pad + user("z", "nowhere"),
		"id used twice":      hdr + pad + user("k", "") + asst + comp + user("c", "c"),
		"cycle":              hdr + pad + user("k", "z") + user("z", "k"),
		"corrupt line":       hdr + pad + user("k", "") + asst + "{not json\n" + comp + user("z", "c"),
		"no model":           hdr + pad + user("k", "") + `{"type":"compaction","id":"c","parentId":"k","timestamp":"x","summary":"s","firstKeptEntryId":"k"}` + "\n" + user("z", "c"),
		"thinking before":    hdr + `{"type":"thinking_level_change","id":"t","parentId":null,"timestamp":"x","thinkingLevel":"high"}` + "\n" + pad + user("k", "t") + asst + comp + user("z", "c"),
		"target not on path": hdr + pad + user("k", "") + asst + comp + `{"type":"tool_result_truncation","id":"tr","parentId":"c","timestamp":"x","targetId":"p3","toolCallId":"q"}` + "\n",
	} {
		_, ok, err := readTail(bytes.NewReader([]byte(data)), int64(len(data)), 0)
		if err != nil || ok {
			t.Errorf("%s: readTail took the tail (ok %v, err %v); it must leave the file to a full load", name, ok, err)
		}
	}
}

// TestTailTornLastLine: a session file cut at every byte of its last
// line opens from its tail with the torn line cut off and reported, and
// gives the context of the file without that line.
func TestTailTornLastLine(t *testing.T) {
	smallTailChunks(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 7))
	var data []byte
	for {
		data = randomTranscript(r, 80, false)
		if _, ok, _ := readTail(bytes.NewReader(data), int64(len(data)), 0); ok {
			break
		}
	}
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	whole, err := Parse("", data[:last])
	if err != nil {
		t.Fatal(err)
	}
	want := whole.Context("")
	for cut := last + 1; cut < len(data); cut += 1 + (len(data)-last)/40 {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		sess, err := (&JSONLStore{Dir: dir, Sync: SyncNever}).Open(ctx, path, nil)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		fs := sess.(*FileSession)
		if diff := cmp.Diff(want, fs.Context()); diff != "" {
			t.Fatalf("cut at %d: context differs:\n%s", cut, diff)
		}
		if w := fs.Warnings(); len(w) != 1 || w[0] != tornWarning(cut-last) {
			t.Fatalf("cut at %d: warnings %q", cut, w)
		}
		if !fs.t.partial {
			t.Fatalf("cut at %d: not read from the tail", cut)
		}
		sess.Close()
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data[:last]) {
			t.Fatalf("cut at %d: the torn line was not cut off", cut)
		}
	}
}

// TestTailTornThenWhole: a torn line cut off by the tail read is still
// reported when the file then has to be read whole.
func TestTailTornThenWhole(t *testing.T) {
	smallTailChunks(t)
	var data []byte
	for seed := uint64(0); ; seed++ {
		// A transcript whose tail needs its older part, then a thinking
		// change there, which the tail cannot place.
		d := randomTranscript(rand.New(rand.NewPCG(seed, 8)), 60, false)
		if _, ok, _ := readTail(bytes.NewReader(d), int64(len(d)), 0); !ok {
			continue
		}
		if data = withRootThinking(d); !bytes.Equal(data, d) {
			if _, ok, _ := readTail(bytes.NewReader(data), int64(len(data)), 0); !ok {
				break
			}
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	os.WriteFile(path, append(data, `{"type":"mess`...), 0o600)
	sess, err := (&JSONLStore{Dir: dir, Sync: SyncNever}).Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	fs := sess.(*FileSession)
	if fs.t.partial {
		t.Fatal("read from the tail, with a thinking change it cannot place")
	}
	if w := fs.Warnings(); len(w) != 1 || w[0] != tornWarning(len(`{"type":"mess`)) {
		t.Fatalf("warnings %q, want the torn line's", w)
	}
}

// FuzzTail: on any bytes, readTail either refuses or gives the context a
// full load gives.
func FuzzTail(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(randomTranscript(r, 30, false))
	}
	f.Add(randomTranscript(r, 30, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		smallTailChunks(t)
		complete, _ := splitTorn(data)
		tail, ok, err := readTail(bytes.NewReader(complete), int64(len(complete)), 0)
		if err != nil || !ok {
			return
		}
		full, err := Parse("fuzz.jsonl", complete)
		if err != nil {
			// Only what was read is checked: a bad line before it is
			// for a full load (show, export, repair) to find.
			var ce *CorruptLineError
			if !errors.As(err, &ce) {
				t.Fatalf("the tail was taken from a file a full load refuses: %v", err)
			}
			off := 0
			for range ce.Line - 1 {
				off += bytes.IndexByte(complete[off:], '\n') + 1
			}
			if int64(off) >= tail.tailFrom {
				t.Fatalf("line %d at offset %d is bad (%v), and the tail read from %d", ce.Line, off, err, tail.tailFrom)
			}
			return
		}
		if diff := cmp.Diff(full.Context(""), tail.Context("")); diff != "" {
			t.Fatalf("context differs (-full +tail):\n%s", diff)
		}
	})
}

// SmallTailChunks lets the external tests run the conformance suite with
// every reopened session read from its tail.
var SmallTailChunks = smallTailChunks

// A session opened from its tail still finds a keyed entry written long
// before the entries it read: a repeated delivery is not written again.
func TestTailIdempotentAppend(t *testing.T) {
	smallTailChunks(t)
	ctx := context.Background()
	st := NewJSONLStore(t.TempDir())
	s, err := st.Create(ctx, CreateOptions{Cwd: "/tail-idem"})
	if err != nil {
		t.Fatal(err)
	}
	user := MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("go")}, Timestamp: 1})
	if _, err := s.Append(ctx, user); err != nil {
		t.Fatal(err)
	}
	keyed := CustomEntry("mirror", json.RawMessage(`{"n":0}`))
	keyed.IdemKey = "mirror-0"
	first, err := s.Append(ctx, keyed)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for i := range 200 {
		if last, err = s.Append(ctx, CustomEntry("filler", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))); err != nil {
			t.Fatal(err)
		}
	}
	// A compaction makes the context, and so the tail read, start late.
	if _, err := s.Append(ctx, CompactionEntry("summary", last, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, ModelChangeEntry("faux", "faux-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, user); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := st.Open(ctx, s.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !s2.(*FileSession).t.partial {
		t.Fatal("the session was not opened from its tail; the test would not test that path")
	}
	again, err := s2.Append(ctx, keyed)
	if err != nil || again != first {
		t.Fatalf("repeated delivery: id %s (%v), want %s", again, err, first)
	}
	tr, _ := st.Load(ctx, s.ID())
	if len(tr.Entries) != 205 {
		t.Errorf("%d entries, want 205", len(tr.Entries))
	}
}
