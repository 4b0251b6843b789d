package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// createWritten creates session id (fresh when "") in cwd and writes its
// file.
func createWritten(t *testing.T, st *JSONLStore, id, cwd string) string {
	t.Helper()
	ctx := context.Background()
	s, err := st.Create(ctx, CreateOptions{ID: id, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, crashEntry(0)); err != nil {
		t.Fatal(err)
	}
	return s.ID()
}

// A known exact id is found without scanning the store: its cost does
// not grow with the number of sessions.
func TestResolveKnownIDDoesNotScan(t *testing.T) {
	st := &JSONLStore{Dir: t.TempDir(), Sync: SyncNever}
	var ids []string
	for range 300 {
		ids = append(ids, createWritten(t, st, "", "/w"))
	}
	fresh := &JSONLStore{Dir: st.Dir, Sync: SyncNever} // knows nothing yet
	for _, s := range []*JSONLStore{st, fresh} {
		if _, err := s.Resolve(ids[7]); err != nil { // the fresh store scans once
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := s.Resolve(ids[7]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 20 { // a scan of 300 files allocates more than 300 times
			t.Fatalf("Resolve of a known id: %.0f allocations, a scan of the store", allocs)
		}
	}
}

// What another process does to the files is seen: a session it deletes
// is gone, one it moves is found at its new place, one it adds is found
// and makes a prefix ambiguous.
func TestResolveSeesOtherProcesses(t *testing.T) {
	dir := t.TempDir()
	st := &JSONLStore{Dir: dir, Sync: SyncNever}
	other := &JSONLStore{Dir: dir, Sync: SyncNever}
	a := createWritten(t, st, "sess-a", "/w")
	b := createWritten(t, st, "sess-b", "/w")
	pa, err := st.Resolve(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resolve(b); err != nil {
		t.Fatal(err)
	}

	if err := other.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resolve(b); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted elsewhere: %v, want ErrNotFound", err)
	}

	moved := filepath.Join(dir, CwdSlug("/elsewhere"), filepath.Base(pa))
	if err := os.MkdirAll(filepath.Dir(moved), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(pa, moved); err != nil {
		t.Fatal(err)
	}
	if p, err := st.Resolve(a); err != nil || p != moved {
		t.Fatalf("moved elsewhere: %q, %v; want %q", p, err, moved)
	}

	createWritten(t, other, "sess-a2", "/w")
	if p, err := st.Resolve("sess-a"); err != nil || p != moved {
		t.Fatalf("exact id beside a longer one: %q, %v", p, err)
	}
	if _, err := st.Resolve("sess-a2"); err != nil {
		t.Fatalf("added elsewhere: %v", err)
	}
	if _, err := st.Resolve("sess-"); err == nil || !strings.Contains(err.Error(), "matches 2 sessions") {
		t.Fatalf("ambiguous prefix: %v", err)
	}
}

// A fork and a deletion by the same store keep its index in step.
func TestResolveForkDelete(t *testing.T) {
	st := &JSONLStore{Dir: t.TempDir(), Sync: SyncNever}
	ctx := context.Background()
	a := createWritten(t, st, "", "/w")
	f, err := st.Fork(ctx, a, "", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resolve(f); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, f); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resolve(f); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted fork: %v", err)
	}
	if _, err := st.Resolve(a); err != nil {
		t.Fatal(err)
	}
}
