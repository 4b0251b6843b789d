package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// Delete removes a session's file and spill directory; a locked session
// is refused, and a prefix names nothing.
func TestJSONLStoreDelete(t *testing.T) {
	ctx := context.Background()
	st := NewJSONLStore(t.TempDir())
	s, err := st.Create(ctx, CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, Entry{Type: EntryMessage, Message: &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hi")}}}); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	path, _ := st.Resolve(id)
	spill := filepath.Join(filepath.Dir(path), filepath.Base(path[:len(path)-len(".jsonl")])+".spill")
	if err := os.Mkdir(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, id); err == nil {
		t.Fatal("deleted a session another writer holds")
	}
	s.Close()
	if err := st.Delete(ctx, id[:8]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete by prefix: %v", err)
	}
	if err := st.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("load after delete: %v", err)
	}
	if _, err := os.Stat(spill); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spill dir: %v", err)
	}
}
