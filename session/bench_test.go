package session

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// benchTranscript writes a transcript of n entries in the crash test's
// cycle (user, tool call, result, answer) and returns its path.
func benchTranscript(b *testing.B, n int) string {
	b.Helper()
	h := Header{Type: "session", Version: CurrentVersion, ID: "bench", Timestamp: "2026-01-01T00:00:00.000Z", Cwd: "/bench"}
	entries := make([]Entry, n)
	parent := ""
	for k := range entries {
		e := crashEntry(k)
		e.ID = strconv.FormatInt(int64(0x10000000+k), 16)
		e.ParentID = parent
		e.Timestamp = "2026-01-01T00:00:00.000Z"
		if e.Message.Role == llm.RoleAssistant {
			e.Message.Provider, e.Message.Model, e.Message.API = "anthropic", "claude-sonnet-4-5", "anthropic-messages"
			e.Message.Usage = &llm.Usage{Input: 1200, Output: 80, CacheRead: 9000, Total: 10280, Cost: llm.Cost{Total: 0.0123}}
		}
		parent = e.ID
		entries[k] = e
	}
	data, err := encodeTranscript(&h, entries)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkLoad100k loads a 100,000-entry transcript (budget: under 1 s).
func BenchmarkLoad100k(b *testing.B) {
	path := benchTranscript(b, 100_000)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppend appends a message without fsync (budget: under 100 µs).
func BenchmarkAppend(b *testing.B) {
	st := &JSONLStore{Dir: b.TempDir(), Sync: SyncNever}
	ctx := context.Background()
	s, err := st.Create(ctx, CreateOptions{Cwd: "/bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, crashEntry(0)); err != nil {
		b.Fatal(err)
	}
	e := crashEntry(3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContextDeepTree builds the context at the leaf of a 100,000-entry
// chain with a compaction half way.
func BenchmarkContextDeepTree(b *testing.B) {
	t, err := LoadFile(benchTranscript(b, 100_000))
	if err != nil {
		b.Fatal(err)
	}
	mid := t.Entries[50_000]
	t.add(Entry{Type: EntryMessage, ID: "side", ParentID: t.Leaf, Message: crashEntry(0).Message})
	c := CompactionEntry("summary", mid.ID, 1000)
	c.ID, c.ParentID = "compact", "side"
	t.add(c)
	b.ReportAllocs()
	for b.Loop() {
		if ctx := t.Context(""); len(ctx.Messages) != 50_002 {
			b.Fatalf("context has %d messages", len(ctx.Messages))
		}
	}
}

// BenchmarkRepair runs the repair pipeline over a 1,000-message history.
func BenchmarkRepair(b *testing.B) {
	msgs := make([]llm.Message, 1000)
	for k := range msgs {
		msgs[k] = *crashEntry(k).Message
	}
	b.ReportAllocs()
	for b.Loop() {
		Repair(msgs, RepairOptions{API: llm.APIAnthropicMessages})
	}
}
