package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

func newStore(t *testing.T) *JSONLStore {
	t.Helper()
	return &JSONLStore{Dir: t.TempDir(), Sync: SyncNever}
}

func mustAppend(t *testing.T, s Session, e Entry) string {
	t.Helper()
	id, err := s.Append(context.Background(), e)
	if err != nil {
		t.Fatalf("append %s: %v", e.Type, err)
	}
	return id
}

func assistantMsg(text string, usage *llm.Usage) llm.Message {
	m := asst(llm.Text(text))
	m.Provider, m.Model, m.Usage = "faux", "faux-1", usage
	return m
}

func TestFileCreatedWithFirstUserMessage(t *testing.T) {
	st := newStore(t)
	s, err := st.Create(context.Background(), CreateOptions{Cwd: "/work/proj"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fs := s.(*FileSession)
	m1 := mustAppend(t, s, ModelChangeEntry("faux", "faux-1"))
	m2 := mustAppend(t, s, ThinkingLevelEntry(llm.ThinkingLow))
	if _, err := os.Stat(fs.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file exists before the first user message: %v", err)
	}
	if _, err := st.Load(context.Background(), s.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load before the first user message: err = %v, want ErrNotFound", err)
	}
	u := mustAppend(t, s, MessageEntry(user("hello")))
	data, err := os.ReadFile(fs.Path())
	if err != nil {
		t.Fatalf("no file after the first user message: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("file has %d lines, want header + 3 entries:\n%s", len(lines), data)
	}
	var h Header
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil || h.Type != "session" || h.Version != 3 || h.Cwd != "/work/proj" || h.ID != s.ID() {
		t.Fatalf("bad header %s (%v)", lines[0], err)
	}
	if !strings.Contains(lines[1], `"parentId":null`) {
		t.Errorf("root entry should have parentId null: %s", lines[1])
	}
	tr := s.Transcript()
	wantParents := map[string]string{m1: "", m2: m1, u: m2}
	for _, e := range tr.Entries {
		if wantParents[e.ID] != e.ParentID {
			t.Errorf("entry %s: parent %q, want %q", e.ID, e.ParentID, wantParents[e.ID])
		}
		if len(e.ID) != 8 || e.Time().IsZero() {
			t.Errorf("entry %+v: want an 8-char id and a timestamp", e)
		}
	}
}

func TestRoundTripAndResume(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	s, err := st.Create(ctx, CreateOptions{Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	entries := []Entry{
		MessageEntry(user("q1")),
		MessageEntry(assistantMsg("a1", &llm.Usage{Total: 10, Cost: llm.Cost{Total: 0.5}})),
		LabelEntry("x", "checkpoint"),
		CustomEntry("ext", json.RawMessage(`{"k":1}`)),
		CompactionEntry("sum", "", 123),
		TruncationEntry("", "c1", []llm.Content{llm.Text("cut")}),
	}
	for _, e := range entries {
		mustAppend(t, s, e)
	}
	before := s.Transcript()
	if err := s.EndTurn(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	loaded, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(asJSONAny(t, before.Entries), asJSONAny(t, loaded.Entries)); d != "" {
		t.Fatalf("entries changed through the file (-before +after):\n%s", d)
	}
	if loaded.Leaf != before.Leaf || len(loaded.Warnings) != 0 {
		t.Errorf("leaf %s (want %s), warnings %v", loaded.Leaf, before.Leaf, loaded.Warnings)
	}
	// Resume by id prefix and continue from the last entry.
	s2, err := st.Open(ctx, s.ID()[:13], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	id := mustAppend(t, s2, MessageEntry(user("q2")))
	e, _ := s2.Transcript().Entry(id)
	if e.ParentID != before.Leaf {
		t.Errorf("resumed append has parent %s, want the old leaf %s", e.ParentID, before.Leaf)
	}
}

func asJSONAny(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// writeSession creates a session with n user/assistant pairs and returns
// its id and path.
func writeSession(t *testing.T, st *JSONLStore, n int) (string, string) {
	t.Helper()
	s, err := st.Create(context.Background(), CreateOptions{Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		mustAppend(t, s, MessageEntry(user("q"+string(rune('a'+i)))))
		mustAppend(t, s, MessageEntry(assistantMsg("a", nil)))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.ID(), s.(*FileSession).Path()
}

func TestTornTail(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	id, path := writeSession(t, st, 2)
	good, _ := os.ReadFile(path)
	torn := append(append([]byte{}, good...), `{"type":"message","id":"deadbeef","par`...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := LoadFile(path)
	if err != nil {
		t.Fatalf("load with a torn tail: %v", err)
	}
	if len(tr.Entries) != 4 || len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0], "incomplete last line") {
		t.Fatalf("entries %d, warnings %q", len(tr.Entries), tr.Warnings)
	}
	s, err := st.Open(ctx, id, nil)
	if err != nil {
		t.Fatalf("open with a torn tail: %v", err)
	}
	if w := s.(*FileSession).Warnings(); len(w) != 1 || !strings.Contains(w[0], "cut off") {
		t.Errorf("open warnings = %q, want the cut reported", w)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, good) {
		t.Fatalf("open did not cut the file back to its last newline")
	}
	mustAppend(t, s, MessageEntry(user("more")))
	s.Close()
	tr, err = LoadFile(path)
	if err != nil || len(tr.Entries) != 5 || len(tr.Warnings) != 0 {
		t.Fatalf("after append: %d entries, warnings %q, err %v", len(tr.Entries), tr.Warnings, err)
	}
}

func TestCorruptMiddleLineAndRepair(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	id, path := writeSession(t, st, 2)
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	// Line 3 (the first assistant message) is corrupted.
	lines[2] = `{"type":"message","id":` + "\x00garbage\n"
	original := strings.Join(lines, "")
	os.WriteFile(path, []byte(original), 0o600)

	_, err := LoadFile(path)
	var ce *CorruptLineError
	if !errors.As(err, &ce) || ce.Line != 3 || ce.Path != path {
		t.Fatalf("load: err = %v, want a CorruptLineError for line 3 of %s", err, path)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "repair") {
		t.Errorf("message should name the file, the line and the fix: %v", err)
	}
	if _, err := st.Open(ctx, id, nil); !errors.As(err, &ce) {
		t.Fatalf("open: err = %v, want a CorruptLineError", err)
	}
	rep, err := st.Repair(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int{3}, rep.DroppedLines); d != "" || rep.Reparented != 1 {
		t.Errorf("repair report %+v", rep)
	}
	if bak, _ := os.ReadFile(rep.Backup); string(bak) != original {
		t.Errorf("backup %s does not hold the original file", rep.Backup)
	}
	tr, err := LoadFile(path)
	if err != nil {
		t.Fatalf("load after repair: %v", err)
	}
	if len(tr.Entries) != 3 || len(tr.Path(tr.Leaf)) != 3 {
		t.Errorf("after repair: %d entries, path of %d; want 3 in one chain", len(tr.Entries), len(tr.Path(tr.Leaf)))
	}
	// A second repair has nothing to do.
	if rep, err := st.Repair(ctx, id, nil); err != nil || rep.Backup != "" {
		t.Errorf("second repair: %+v, %v", rep, err)
	}
}

func TestMigration(t *testing.T) {
	dir := t.TempDir()
	v1 := `{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}
{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","content":[{"type":"text","text":"hook"}],"timestamp":2}}
`
	path := filepath.Join(dir, CwdSlug("/p"), "2025-01-01T00-00-00-000Z_old.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(v1), 0o600)
	tr, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.Version != CurrentVersion || len(tr.Entries) != 2 || tr.Entries[1].ParentID != tr.Entries[0].ID || len(tr.Warnings) != 1 {
		t.Fatalf("migrated transcript: %+v", tr)
	}
	got := shape(tr.Context("").Messages)
	if d := cmp.Diff([]string{"u:hi", "u:hook"}, got); d != "" {
		t.Errorf("context (-want +got):\n%s", d)
	}
	st := &JSONLStore{Dir: dir, Sync: SyncNever}
	s, err := st.Open(context.Background(), "old", nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, MessageEntry(user("new")))
	s.Close()
	if _, err := os.Stat(path + ".bak"); err != nil {
		t.Errorf("no backup of the version 1 file: %v", err)
	}
	tr, err = LoadFile(path)
	if err != nil || len(tr.Warnings) != 0 || len(tr.Path(tr.Leaf)) != 3 {
		t.Fatalf("rewritten file: %+v, %v", tr, err)
	}

	os.WriteFile(path, []byte(`{"type":"session","version":9,"id":"old"}`+"\n"), 0o600)
	if _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("a newer version should be refused, got %v", err)
	}
}

func TestBranchAndContext(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	s, _ := st.Create(ctx, CreateOptions{Cwd: "/p"})
	defer s.Close()
	mustAppend(t, s, MessageEntry(user("u1")))
	a1 := mustAppend(t, s, MessageEntry(assistantMsg("a1", nil)))
	mustAppend(t, s, MessageEntry(user("u2")))
	mustAppend(t, s, MessageEntry(assistantMsg("a2", nil)))
	if err := s.Branch(a1); err != nil {
		t.Fatal(err)
	}
	if err := s.Branch("nope"); err == nil {
		t.Error("branching to an unknown entry should fail")
	}
	u3 := mustAppend(t, s, MessageEntry(user("u3")))
	want := []string{"u:u1", "a:a1", "u:u3"}
	if d := cmp.Diff(want, shape(s.Context().Messages)); d != "" {
		t.Errorf("context after branching (-want +got):\n%s", d)
	}
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if tr.Leaf != u3 || len(tr.Entries) != 5 {
		t.Errorf("reloaded leaf %s (want %s), %d entries", tr.Leaf, u3, len(tr.Entries))
	}
	if d := cmp.Diff(want, shape(tr.Context("").Messages)); d != "" {
		t.Errorf("reloaded context (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"u:u1", "a:a1", "u:u2", "a:a2"}, shape(tr.Context(tr.Entries[3].ID).Messages)); d != "" {
		t.Errorf("context of the other branch (-want +got):\n%s", d)
	}
	if kids := tr.Children(a1); len(kids) != 2 {
		t.Errorf("children of the branch point = %v", kids)
	}
}

func TestContextCompactionAndTruncation(t *testing.T) {
	tr := &Transcript{}
	add := func(id, parent string, e Entry) {
		e.ID, e.ParentID, e.Timestamp = id, parent, "2026-01-01T00:00:00.000Z"
		tr.add(e)
	}
	tc := asst(call("c1", "read"))
	tc.Provider, tc.Model = "p1", "m1"
	add("e1", "", MessageEntry(user("old question")))
	add("e2", "e1", MessageEntry(asst(llm.Text("old answer"))))
	add("e3", "e2", MessageEntry(user("kept question")))
	add("e4", "e3", MessageEntry(tc))
	add("e5", "e4", MessageEntry(result("c1", "read", strings.Repeat("big ", 100))))
	add("e6", "e5", CompactionEntry("they talked", "e3", 999))
	add("e7", "e6", TruncationEntry("", "c1", []llm.Content{llm.Text("big [cut]")}))
	add("e8", "e7", ModelChangeEntry("p2", "m2"))
	add("e9", "e8", ThinkingLevelEntry(llm.ThinkingHigh))
	add("e10", "e9", MessageEntry(user("new")))
	c := tr.Context("")
	want := []string{"u:" + summaryPrefix + "they talked" + summarySuffix, "u:kept question", "a:call:c1/read", "r:c1/read=big [cut]", "u:new"}
	if d := cmp.Diff(want, shape(c.Messages)); d != "" {
		t.Errorf("context (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"e6", "e3", "e4", "e5", "e10"}, c.EntryIDs); d != "" {
		t.Errorf("entry ids (-want +got):\n%s", d)
	}
	if c.Provider != "p2" || c.ModelID != "m2" || c.ThinkingLevel != llm.ThinkingHigh {
		t.Errorf("model %s/%s thinking %s", c.Provider, c.ModelID, c.ThinkingLevel)
	}
	// Before the truncation entry the result is whole; before the model
	// change the assistant's model counts.
	c = tr.Context("e6")
	if got := c.Messages[len(c.Messages)-1].Text(); !strings.HasPrefix(got, "big big") {
		t.Errorf("result before the truncation entry = %.20q", got)
	}
	if c.Provider != "p1" || c.ModelID != "m1" {
		t.Errorf("model before the change = %s/%s", c.Provider, c.ModelID)
	}
	// The stored entries are untouched.
	if e, _ := tr.Entry("e5"); !strings.HasPrefix(e.Message.Text(), "big big") {
		t.Error("building the context changed a stored entry")
	}
}

func TestForkAndList(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	s, _ := st.Create(ctx, CreateOptions{Cwd: "/p"})
	mustAppend(t, s, MessageEntry(user("first question")))
	a1 := mustAppend(t, s, MessageEntry(assistantMsg("a1", &llm.Usage{Total: 100, Cost: llm.Cost{Total: 0.25}})))
	mustAppend(t, s, MessageEntry(user("u2")))
	mustAppend(t, s, MessageEntry(assistantMsg("a2", &llm.Usage{Total: 50, Cost: llm.Cost{Total: 0.5}})))
	s.Close()
	other, _ := st.Create(ctx, CreateOptions{Cwd: "/elsewhere"})
	mustAppend(t, other, MessageEntry(user("x")))
	other.Close()

	forkID, err := st.Fork(ctx, s.ID(), a1, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ft, err := st.Load(ctx, forkID)
	if err != nil {
		t.Fatal(err)
	}
	if ft.Header.ParentSession == "" || idFromPath(ft.Header.ParentSession) != s.ID() || ft.Header.Cwd != "/p" {
		t.Errorf("fork header %+v", ft.Header)
	}
	if d := cmp.Diff([]string{"u:first question", "a:a1"}, shape(ft.Context("").Messages)); d != "" {
		t.Errorf("fork context (-want +got):\n%s", d)
	}
	// The fork continues on its own.
	fs, err := st.Open(ctx, forkID, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, fs, MessageEntry(user("fork q")))
	fs.Close()

	list, err := st.List(ctx, "/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("list /p: %d sessions, want 2", len(list))
	}
	var orig Info
	for _, in := range list {
		if in.ID == s.ID() {
			orig = in
		}
	}
	if orig.Messages != 4 || orig.Tokens != 150 || orig.Cost != 0.75 || orig.Title != "first question" || orig.Cwd != "/p" || orig.Created.IsZero() {
		t.Errorf("info %+v", orig)
	}
	all, _ := st.List(ctx, "")
	if len(all) != 3 {
		t.Errorf("list all: %d sessions, want 3", len(all))
	}
	if _, err := st.Resolve("zzzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("resolve unknown: %v", err)
	}
}

func TestAppendErrors(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	s, _ := st.Create(ctx, CreateOptions{})
	id := mustAppend(t, s, MessageEntry(user("x")))
	if _, err := s.Append(ctx, Entry{}); err == nil {
		t.Error("an entry without a type should be refused")
	}
	if _, err := s.Append(ctx, Entry{Type: EntryCustom, ID: id}); err == nil {
		t.Error("a duplicate id should be refused")
	}
	s.Close()
	if _, err := s.Append(ctx, MessageEntry(user("y"))); err == nil {
		t.Error("append after close should fail")
	}
	if _, err := st.Create(ctx, CreateOptions{ID: "a/b"}); err == nil {
		t.Error("an id with a slash should be refused")
	}
}

func TestCwdSlug(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/pi-research/work": "--tmp-pi-research-work--",
		`C:\Users\me`:           "--C--Users-me--",
		"/":                     "----",
	} {
		if got := CwdSlug(in); got != want {
			t.Errorf("CwdSlug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderAndExport(t *testing.T) {
	tr := &Transcript{Header: Header{Type: "session", Version: 3, ID: "sid", Cwd: "/p"}}
	add := func(id, parent string, e Entry) {
		e.ID, e.ParentID = id, parent
		tr.add(e)
	}
	failedMsg := failed(llm.StopReasonError, llm.Text("partial"))
	failedMsg.ErrorMessage = "overloaded"
	add("1", "", MessageEntry(user("please list")))
	add("2", "1", MessageEntry(asst(llm.Text("sure"), call("c1", "ls"))))
	add("3", "2", MessageEntry(result("c1", "ls", "a\nb\nc")))
	add("4", "3", MessageEntry(failedMsg))
	var term, md, js bytes.Buffer
	if err := Render(&term, tr, RenderOptions{MaxResultLines: 2}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"session sid", "please list", "→ ls", "a\n    b\n    … 1 more lines", "✗ error: overloaded"} {
		if !strings.Contains(term.String(), want) {
			t.Errorf("terminal render lacks %q:\n%s", want, term.String())
		}
	}
	if strings.Contains(term.String(), "\x1b[") {
		t.Error("colour codes without Color")
	}
	// Text from a tool or a model must not drive the terminal.
	hostile := &Transcript{Header: Header{Type: "session", Version: 3, ID: "sid"}}
	hostile.add(Entry{Type: EntryMessage, ID: "1", Message: &llm.Message{Role: llm.RoleToolResult, ToolName: "bash",
		Content: []llm.Content{llm.Text("ok\x1b[2J\x1b]0;pwned\x07\rfake\u009b31m\tdone")}}})
	var evil bytes.Buffer
	if err := Render(&evil, hostile, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := evil.String(); strings.ContainsAny(got, "\x1b\x07\r\u009b") || !strings.Contains(got, "ok␛[2J␛]0;pwned␇␍fake\uFFFD31m\tdone") {
		t.Errorf("control characters reached the terminal: %q", got)
	}
	if err := ExportMarkdown(&md, tr, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Session sid", "## User\n\nplease list", "**Tool call** `ls`", "```json\n{\n  \"a\": 1\n}\n```", "**Result** of `ls`"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if err := ExportJSON(&js, tr, "3"); err != nil {
		t.Fatal(err)
	}
	var x Export
	if err := json.Unmarshal(js.Bytes(), &x); err != nil {
		t.Fatal(err)
	}
	if x.Leaf != "3" || len(x.Entries) != 3 || len(x.Messages) != 3 || x.Header.ID != "sid" {
		t.Errorf("json export %+v", x)
	}
}

func TestCreateExistingAndLatest(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	if _, err := Latest(ctx, st, "/p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("latest of an empty store: %v", err)
	}
	id, _ := writeSession(t, st, 1)
	if _, err := st.Create(ctx, CreateOptions{ID: id, Cwd: "/p"}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("creating an existing id: %v", err)
	}
	in, err := Latest(ctx, st, "/p")
	if err != nil || in.ID != id {
		t.Errorf("latest = %+v, %v; want %s", in, err, id)
	}
}

func TestRepairFileEdges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	os.WriteFile(path, []byte("not a header\n"), 0o600)
	if _, err := RepairFile(path); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("repair without a header: %v", err)
	}
	good := `{"type":"session","version":3,"id":"s"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"timestamp":"","message":{"role":"user","content":[],"timestamp":0}}` + "\n"
	os.WriteFile(path, []byte(good+`{"type":"mess`), 0o600)
	rep, err := RepairFile(path)
	if err != nil || len(rep.DroppedLines) != 1 || rep.DroppedLines[0] != 3 {
		t.Fatalf("repair of a torn tail: %+v, %v", rep, err)
	}
	if data, _ := os.ReadFile(path); string(data) != good {
		t.Errorf("repaired file:\n%s", data)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvHome, "/srv/agentloop")
	if d, err := DefaultDir(); err != nil || d != "/srv/agentloop/sessions" {
		t.Errorf("DefaultDir = %q, %v", d, err)
	}
	if st, err := DefaultStore(); err != nil || st.Dir != "/srv/agentloop/sessions" {
		t.Errorf("DefaultStore = %+v, %v", st, err)
	}
}

func TestWriteFailureBreaksTheSession(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	s, _ := st.Create(ctx, CreateOptions{})
	defer s.Close()
	mustAppend(t, s, MessageEntry(user("x")))
	fs := s.(*FileSession)
	fs.f.Close() // the next write and the truncate after it both fail
	if _, err := s.Append(ctx, MessageEntry(user("y"))); err == nil || !strings.Contains(err.Error(), "reopen") {
		t.Fatalf("append on a failed file: %v", err)
	}
	if _, err := s.Append(ctx, MessageEntry(user("z"))); err == nil {
		t.Fatal("a broken session should refuse further appends")
	}
	if n := len(s.Transcript().Entries); n != 1 {
		t.Errorf("failed appends were recorded in memory: %d entries", n)
	}
}

// A write that lands but cannot be synced: the entry is in the file, so
// it must be in the session too (Append returns its id with the error),
// and the file is never written a second time.
func TestSyncFailureAfterWrite(t *testing.T) {
	ctx := context.Background()
	st := &JSONLStore{Dir: t.TempDir(), Sync: SyncEveryEntry}
	s, err := st.Create(ctx, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fs := s.(*FileSession)
	r, w, err := os.Pipe() // writes land, fsync fails (EINVAL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fs.f = w
	id, err := s.Append(ctx, MessageEntry(user("first")))
	if err == nil || id == "" || !strings.Contains(err.Error(), "sync") {
		t.Fatalf("append whose sync fails = %q, %v; want its id and a sync error", id, err)
	}
	if s.Leaf() != id || len(s.Transcript().Entries) != 1 {
		t.Errorf("the written entry is not the session's leaf: leaf %q, %d entries", s.Leaf(), len(s.Transcript().Entries))
	}
	id2, err := s.Append(ctx, MessageEntry(asst(llm.Text("second"))))
	if err == nil || id2 == "" {
		t.Fatalf("second append = %q, %v", id2, err)
	}
	w.Close()
	data, _ := io.ReadAll(r)
	if n := strings.Count(string(data), `"type":"session"`); n != 1 {
		t.Errorf("the header was written %d times:\n%s", n, data)
	}
	if !strings.Contains(string(data), `"parentId":"`+id+`"`) {
		t.Errorf("the second entry does not follow the first:\n%s", data)
	}
	fs.f = nil // already closed
}

func TestContextEntryID(t *testing.T) {
	tr := &Transcript{}
	msg := func(m llm.Message, ts int64) Entry { m.Timestamp = ts; return MessageEntry(m) }
	for i, e := range []Entry{
		msg(user("u1"), 1), msg(asst(call("c1", "x")), 2), msg(user("u2"), 3), msg(asst(llm.Text("a")), 4), msg(user("u3"), 5),
	} {
		e.ID = "e" + strconv.Itoa(i+1)
		if i > 0 {
			e.ParentID = "e" + strconv.Itoa(i)
		}
		tr.add(e)
	}
	c := tr.Context("")
	repaired := Repair(c.Messages, RepairOptions{Now: func() int64 { return 99 }}) // adds a synthetic result after e2
	if len(repaired) != 6 {
		t.Fatalf("repaired %v", shape(repaired))
	}
	for i, want := range []string{"e1", "e2", "e3", "e3", "e4", "e5"} {
		if got, ok := c.EntryID(repaired, i); !ok || got != want {
			t.Errorf("EntryID(%d) = %q, %v; want %s", i, got, ok, want)
		}
	}
	if _, ok := c.EntryID(repaired[:3], 2); ok {
		t.Error("a synthetic last message has no entry")
	}
	// An empty compaction summary keeps only the kept entries.
	comp := CompactionEntry("", "e3", 10)
	comp.ID, comp.ParentID = "e6", "e5"
	tr.add(comp)
	if got := shape(tr.Context("").Messages); len(got) != 3 || got[0] != "u:u2" {
		t.Errorf("context after a summary-less compaction %v", got)
	}
}

func TestOpenWithOnlyATornHeader(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	id, path := writeSession(t, st, 1)
	os.WriteFile(path, []byte(`{"type":"session","vers`), 0o600)
	if _, err := LoadFile(path); !errors.Is(err, ErrNotFound) {
		t.Errorf("load of a torn header: %v", err)
	}
	s, err := st.Open(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, ModelChangeEntry("p", "m"))
	mustAppend(t, s, MessageEntry(user("again")))
	s.Close()
	tr, err := LoadFile(path)
	if err != nil || tr.Header.ID != id || len(tr.Entries) != 2 || tr.Header.Timestamp == "" {
		t.Fatalf("after rewriting a torn header: %+v, %v", tr, err)
	}
}
