package sessiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// Run runs the suite. newStore returns a fresh, empty store for each
// subtest; it is called once per subtest.
func Run(t *testing.T, newStore func(t *testing.T) session.Store) {
	tests := []struct {
		name string
		f    func(t *testing.T, st session.Store)
	}{
		{"CreateAppendLoad", testCreateAppendLoad},
		{"NothingPersistedBeforeFirstUserMessage", testLazyCreate},
		{"ReopenContinuesFromLeaf", testReopen},
		{"BranchWritesNothing", testBranch},
		{"OneWriter", testOneWriter},
		{"List", testList},
		{"Fork", testFork},
		{"ContextThroughCompaction", testCompaction},
		{"UnknownSession", testUnknown},
		{"ConcurrentAppends", testConcurrentAppends},
		{"IdempotentAppends", testIdempotent},
		{"HarnessBinding", testHarnessBinding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, newStore(t)) })
	}
}

func userMsg(text string) session.Entry {
	return session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}, Timestamp: 1})
}

func assistantMsg(text string, tokens int, cost float64) session.Entry {
	return session.MessageEntry(llm.Message{
		Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(text)}, StopReason: llm.StopReasonStop,
		Provider: "faux", Model: "faux-1", Usage: &llm.Usage{Total: tokens, Cost: llm.Cost{Total: cost}}, Timestamp: 2,
	})
}

func appendAll(t *testing.T, s session.Session, entries ...session.Entry) []string {
	t.Helper()
	ids := make([]string, len(entries))
	for i, e := range entries {
		id, err := s.Append(context.Background(), e)
		if err != nil {
			t.Fatalf("append %s: %v", e.Type, err)
		}
		ids[i] = id
	}
	return ids
}

func create(t *testing.T, st session.Store, cwd string) session.Session {
	t.Helper()
	s, err := st.Create(context.Background(), session.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func texts(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i := range msgs {
		out[i] = string(msgs[i].Role) + ":" + msgs[i].Text()
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func testCreateAppendLoad(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/a")
	ids := appendAll(t, s,
		session.ModelChangeEntry("faux", "faux-1"),
		session.ThinkingLevelEntry(llm.ThinkingLow),
		userMsg("hello"),
		assistantMsg("hi", 10, 0.01),
		session.CustomEntry("ext", json.RawMessage(`{"x":1}`)),
	)
	if s.Leaf() != ids[len(ids)-1] {
		t.Errorf("leaf %s, want the last append %s", s.Leaf(), ids[len(ids)-1])
	}
	if err := s.EndTurn(); err != nil {
		t.Fatalf("end turn: %v", err)
	}
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if tr.Header.ID != s.ID() || tr.Header.Cwd != "/conformance/a" || tr.Header.Version != session.CurrentVersion {
		t.Errorf("header %+v", tr.Header)
	}
	if len(tr.Entries) != len(ids) {
		t.Fatalf("loaded %d entries, appended %d", len(tr.Entries), len(ids))
	}
	parent := ""
	for i, e := range tr.Entries {
		if e.ID != ids[i] || e.ParentID != parent || e.Timestamp == "" {
			t.Errorf("entry %d: id %s parent %q ts %q; want id %s parent %q", i, e.ID, e.ParentID, e.Timestamp, ids[i], parent)
		}
		parent = e.ID
	}
	c := tr.Context("")
	if want := []string{"user:hello", "assistant:hi"}; !equal(texts(c.Messages), want) {
		t.Errorf("context %v, want %v", texts(c.Messages), want)
	}
	if c.Provider != "faux" || c.ModelID != "faux-1" || c.ThinkingLevel != llm.ThinkingLow {
		t.Errorf("context model %s/%s thinking %s", c.Provider, c.ModelID, c.ThinkingLevel)
	}
	if got := texts(s.Context().Messages); !equal(got, texts(c.Messages)) {
		t.Errorf("the open session's context %v differs from the loaded one", got)
	}
}

func testLazyCreate(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/lazy")
	appendAll(t, s, session.ModelChangeEntry("faux", "faux-1"))
	if _, err := st.Load(ctx, s.ID()); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("load before the first user message: %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	list, err := st.List(ctx, "/conformance/lazy")
	if err != nil || len(list) != 0 {
		t.Errorf("list shows a session without a prompt: %v %v", list, err)
	}
}

func testReopen(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/reopen")
	ids := appendAll(t, s, userMsg("one"), assistantMsg("two", 1, 0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := st.Open(ctx, s.ID(), nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	if w := s2.Warnings(); len(w) != 0 {
		t.Errorf("a cleanly closed session reopened with warnings %q", w)
	}
	if s2.Leaf() != ids[1] {
		t.Errorf("reopened leaf %s, want %s", s2.Leaf(), ids[1])
	}
	id := appendAll(t, s2, userMsg("three"))[0]
	tr := s2.Transcript()
	e, ok := tr.Entry(id)
	if !ok || e.ParentID != ids[1] {
		t.Fatalf("append after reopen: %+v", e)
	}
	if got := texts(s2.Context().Messages); !equal(got, []string{"user:one", "assistant:two", "user:three"}) {
		t.Errorf("context %v", got)
	}
}

func testBranch(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/branch")
	ids := appendAll(t, s, userMsg("u1"), assistantMsg("a1", 1, 0), userMsg("u2"), assistantMsg("a2", 1, 0))
	if err := s.Branch(ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Branch("no-such-entry"); err == nil {
		t.Error("branch to an unknown entry should fail")
	}
	tr, _ := st.Load(ctx, s.ID())
	if len(tr.Entries) != 4 {
		t.Errorf("branching wrote something: %d entries", len(tr.Entries))
	}
	id := appendAll(t, s, userMsg("u3"))[0]
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	e, _ := tr.Entry(id)
	if e == nil || e.ParentID != ids[1] || tr.Leaf != id {
		t.Fatalf("append after branch: entry %+v, leaf %s", e, tr.Leaf)
	}
	if got := texts(tr.Context("").Messages); !equal(got, []string{"user:u1", "assistant:a1", "user:u3"}) {
		t.Errorf("context on the new branch %v", got)
	}
	if got := texts(tr.Context(ids[3]).Messages); !equal(got, []string{"user:u1", "assistant:a1", "user:u2", "assistant:a2"}) {
		t.Errorf("context on the old branch %v", got)
	}
}

func testOneWriter(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/lock")
	appendAll(t, s, userMsg("x"))
	if _, err := st.Open(ctx, s.ID(), nil); !errors.Is(err, session.ErrLocked) {
		t.Errorf("open while another run has it: %v, want ErrLocked", err)
	}
	if _, err := st.Lock(ctx, s.ID(), nil); !errors.Is(err, session.ErrLocked) {
		t.Errorf("lock while another run has it: %v, want ErrLocked", err)
	}
	if _, err := st.Load(ctx, s.ID()); err != nil {
		t.Errorf("load must not need the lock: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := st.Lock(ctx, s.ID(), nil)
	if err != nil {
		t.Fatalf("lock after close: %v", err)
	}
	if _, err := st.Open(ctx, s.ID(), nil); !errors.Is(err, session.ErrLocked) {
		t.Errorf("open while locked: %v, want ErrLocked", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	s2, err := st.Open(ctx, s.ID(), nil)
	if err != nil {
		t.Fatalf("open after release: %v", err)
	}
	s2.Close()
}

func testList(t *testing.T, st session.Store) {
	ctx := context.Background()
	var want []string
	for i := range 2 {
		s := create(t, st, "/conformance/list")
		appendAll(t, s, userMsg(fmt.Sprintf("question %d", i)), assistantMsg("answer", 100, 0.5), assistantMsg("more", 50, 0.25))
		s.Close()
		want = append(want, s.ID())
	}
	other := create(t, st, "/conformance/other")
	appendAll(t, other, userMsg("elsewhere"))
	other.Close()
	list, err := st.List(ctx, "/conformance/list")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("list: %d sessions, want 2", len(list))
	}
	for _, in := range list {
		if in.Err != nil || in.Cwd != "/conformance/list" || in.Messages != 3 || in.Tokens != 150 || in.Cost != 0.75 || in.Updated.IsZero() {
			t.Errorf("info %+v", in)
		}
		if in.ID != want[0] && in.ID != want[1] {
			t.Errorf("unexpected session %s", in.ID)
		}
	}
	if !list[0].Updated.After(list[1].Updated) && !list[0].Updated.Equal(list[1].Updated) {
		t.Errorf("list is not newest first: %v then %v", list[0].Updated, list[1].Updated)
	}
	all, err := st.List(ctx, "")
	if err != nil || len(all) != 3 {
		t.Errorf("list all: %d sessions (%v), want 3", len(all), err)
	}
}

func testFork(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/fork")
	ids := appendAll(t, s, userMsg("u1"), assistantMsg("a1", 1, 0), userMsg("u2"), assistantMsg("a2", 1, 0))
	s.Close()
	forkID, err := st.Fork(ctx, s.ID(), ids[1], session.CreateOptions{})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	if forkID == s.ID() {
		t.Fatal("fork reused the source id")
	}
	ft, err := st.Load(ctx, forkID)
	if err != nil {
		t.Fatalf("load fork: %v", err)
	}
	if got := texts(ft.Context("").Messages); !equal(got, []string{"user:u1", "assistant:a1"}) {
		t.Errorf("fork context %v", got)
	}
	if ft.Header.Cwd != "/conformance/fork" {
		t.Errorf("fork cwd %q", ft.Header.Cwd)
	}
	fs, err := st.Open(ctx, forkID, nil)
	if err != nil {
		t.Fatalf("open fork: %v", err)
	}
	appendAll(t, fs, userMsg("fork"))
	fs.Close()
	orig, err := st.Load(ctx, s.ID())
	if err != nil || len(orig.Entries) != 4 {
		t.Errorf("source changed by the fork: %v", err)
	}
	if _, err := st.Fork(ctx, s.ID(), "no-such-entry", session.CreateOptions{}); err == nil {
		t.Error("fork at an unknown entry should fail")
	}
}

func testCompaction(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/compact")
	ids := appendAll(t, s, userMsg("old"), assistantMsg("old answer", 1, 0), userMsg("kept"), assistantMsg("kept answer", 1, 0))
	appendAll(t, s, session.CompactionEntry("SUMMARY", ids[2], 1234), userMsg("new"))
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	got := texts(tr.Context("").Messages)
	if len(got) != 4 || got[1] != "user:kept" || got[2] != "assistant:kept answer" || got[3] != "user:new" {
		t.Fatalf("context through a compaction %v", got)
	}
	if m := tr.Context("").Messages[0]; m.Role != llm.RoleUser || !contains(m.Text(), "SUMMARY") {
		t.Errorf("the summary should open the context, got %v", got[0])
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func testUnknown(t *testing.T, st session.Store) {
	ctx := context.Background()
	if _, err := st.Open(ctx, "00000000-0000-7000-8000-000000000000", nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("open unknown: %v, want ErrNotFound", err)
	}
	if _, err := st.Load(ctx, "00000000-0000-7000-8000-000000000000"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("load unknown: %v, want ErrNotFound", err)
	}
}

func testConcurrentAppends(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/concurrent")
	appendAll(t, s, userMsg("start"))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				if _, err := s.Append(ctx, session.CustomEntry("n", json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)))); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 101 {
		t.Fatalf("%d entries, want 101", len(tr.Entries))
	}
	if path := tr.Path(tr.Leaf); len(path) != 101 {
		t.Errorf("concurrent appends should form one chain, the leaf's path has %d entries", len(path))
	}
}

// An entry carrying an idempotency key is written once: delivered twice,
// before and after the session is reopened, and before the first user
// message made the session persistent.
func testIdempotent(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/idem")
	keyed := func(key, text string) session.Entry {
		e := session.CustomEntry("mirror", json.RawMessage(fmt.Sprintf(`{"text":%q}`, text)))
		e.IdemKey = key
		return e
	}
	early := appendAll(t, s, keyed("early", "before the prompt"))[0]
	if again := appendAll(t, s, keyed("early", "before the prompt"))[0]; again != early {
		t.Errorf("a keyed entry appended twice before the first prompt: ids %s and %s", early, again)
	}
	ids := appendAll(t, s, userMsg("go"), keyed("run1/1/call1", "first delivery"))
	leaf := s.Leaf()
	if again := appendAll(t, s, keyed("run1/1/call1", "second delivery"))[0]; again != ids[1] {
		t.Errorf("second delivery got id %s, want the first one's %s", again, ids[1])
	}
	if s.Leaf() != leaf {
		t.Errorf("a repeated delivery moved the leaf to %s", s.Leaf())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := st.Open(ctx, s.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if again := appendAll(t, s2, keyed("run1/1/call1", "after reopening"))[0]; again != ids[1] {
		t.Errorf("delivery after reopening got id %s, want %s", again, ids[1])
	}
	if again := appendAll(t, s2, keyed("early", "after reopening"))[0]; again != early {
		t.Errorf("early key after reopening got id %s, want %s", again, early)
	}
	other := appendAll(t, s2, keyed("run1/1/call2", "another call"))[0]
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.ID+":"+e.IdemKey)
	}
	want := []string{early + ":early", ids[0] + ":", ids[1] + ":run1/1/call1", other + ":run1/1/call2"}
	if !equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	if e, _ := tr.Entry(ids[1]); e == nil || !contains(string(e.Data), "first delivery") {
		t.Errorf("the kept entry should be the first delivery: %+v", e)
	}
}

// testHarnessBinding: the last binding on the path is in force; an empty
// native id clears it; the fields survive a reload.
func testHarnessBinding(t *testing.T, st session.Store) {
	ctx := context.Background()
	s := create(t, st, "/conformance/binding")
	appendAll(t, s, userMsg("hello"), session.HarnessBindingEntry("fake", "thr1", "1.0", "/w"))
	if b := s.Transcript().Binding(s.Leaf()); b == nil || b.Harness != "fake" || b.NativeID != "thr1" {
		t.Fatalf("binding %+v", b)
	}
	appendAll(t, s, session.HarnessBindingEntry("fake", "thr2", "1.0", "/w"))
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if b := tr.Binding(tr.Leaf); b == nil || b.NativeID != "thr2" || b.Version != "1.0" || b.Cwd != "/w" {
		t.Fatalf("loaded binding %+v, want the transferred thr2", b)
	}
	appendAll(t, s, session.HarnessBindingEntry("fake", "", "", ""))
	if b := s.Transcript().Binding(s.Leaf()); b != nil {
		t.Errorf("a cleared binding is still in force: %+v", b)
	}
	if got := texts(s.Context().Messages); !equal(got, []string{"user:hello"}) {
		t.Errorf("binding entries reached the context: %v", got)
	}
}
