package session

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// A subagent's session records its parent, the parent's call, its task
// and depth in the header; any other header is written as before, with
// none of those keys.
func TestHeaderRecordsSubagent(t *testing.T) {
	store := NewJSONLStore(t.TempDir())
	ctx := context.Background()
	header := func(opts CreateOptions) (map[string]any, Header) {
		t.Helper()
		s, err := store.Create(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, MessageEntry(llm.UserText("hi"))); err != nil {
			t.Fatal(err)
		}
		path := s.(*FileSession).Path()
		s.Close()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Scan()
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		tr, err := store.Load(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		return v, tr.Header
	}
	plain, _ := header(CreateOptions{Cwd: "/w"})
	for _, k := range []string{"parentSessionId", "parentToolCallId", "taskId", "depth", "agent"} {
		if _, ok := plain[k]; ok {
			t.Fatalf("a plain header has %q: %v", k, plain)
		}
	}
	_, h := header(CreateOptions{Cwd: "/w", Subagent: &Subagent{ParentSessionID: "p1", ParentToolCallID: "call_1", TaskID: "t_1", Depth: 2, Agent: "general"}})
	if h.ParentSessionID != "p1" || h.ParentToolCallID != "call_1" || h.TaskID != "t_1" || h.Depth != 2 || h.Agent != "general" {
		t.Fatalf("header %+v", h)
	}
}
