package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// benchTranscript writes a transcript of n entries in the crash test's
// cycle (user, tool call, result, answer) and returns its path.
func benchTranscript(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := os.WriteFile(path, cycleTranscript("bench", n, "", 0), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// cycleTranscript returns the file of a linear session of n entries in the
// crash test's cycle, each text followed by pad, with a compaction keeping
// the last 40 entries as every compactEvery-th entry (none for 0).
func cycleTranscript(id string, n int, pad string, compactEvery int) []byte {
	h := Header{Type: "session", Version: CurrentVersion, ID: id, Timestamp: "2026-01-01T00:00:00.000Z", Cwd: "/bench"}
	entries := make([]Entry, n)
	parent := ""
	for k := range entries {
		e := crashEntry(k)
		if compactEvery > 0 && k%compactEvery == compactEvery-1 {
			e = CompactionEntry("the conversation so far, summarised", entries[max(0, k-40)].ID, 150_000)
		} else if pad != "" {
			e.Message.Content[0].Text += " " + pad
		}
		e.ID = strconv.FormatInt(int64(0x10000000+k), 16)
		e.ParentID = parent
		e.Timestamp = "2026-01-01T00:00:00.000Z"
		if e.Message != nil && e.Message.Role == llm.RoleAssistant {
			e.Message.Provider, e.Message.Model, e.Message.API = "anthropic", "claude-sonnet-4-5", "anthropic-messages"
			e.Message.Usage = &llm.Usage{Input: 1200, Output: 80, CacheRead: 9000, Total: 10280, Cost: llm.Cost{Total: 0.0123}}
		}
		parent = e.ID
		entries[k] = e
	}
	data, err := encodeTranscript(&h, entries)
	if err != nil {
		panic(err)
	}
	return data
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

// compactedTranscript returns a session file of n entries of about 400
// bytes, compacted every 1,000 entries: a long session that was compacted
// as it grew.
func compactedTranscript(n int) []byte {
	return cycleTranscript("0195e5a0-0000-7000-8000-000000000100", n, strings.Repeat("lorem ipsum ", 4), 1000)
}

// TestWriteBenchSession writes the 100,000-entry compacted session the
// CLI is timed on (docs/benchmarks.md) to $AGENTLOOP_BENCH_SESSION.
func TestWriteBenchSession(t *testing.T) {
	path := os.Getenv("AGENTLOOP_BENCH_SESSION")
	if path == "" {
		t.Skip("set AGENTLOOP_BENCH_SESSION to the file to write")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, compactedTranscript(100_000), 0o600); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkOpen100kCompacted opens a 100,000-entry compacted session for
// appending and builds its context: from its tail (what continuing a
// session does), without and with a current summary cache (which spares
// the search of the bytes before the tail for a thinking change), and,
// for comparison, read whole.
func BenchmarkOpen100kCompacted(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, CwdSlug("/bench"), "2026-01-01T00-00-00-000Z_bench.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o700)
	data := compactedTranscript(100_000)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	st := &JSONLStore{Dir: dir, Sync: SyncNever}
	ctx := context.Background()
	for _, mode := range []string{"tail", "tail-listed", "full"} {
		b.Run(mode, func(b *testing.B) {
			os.Remove(filepath.Join(filepath.Dir(path), summaryFile))
			if mode == "tail-listed" {
				if _, err := st.List(ctx, ""); err != nil {
					b.Fatal(err)
				}
			}
			if mode == "full" {
				old := tailMinSize
				tailMinSize = 1 << 62
				b.Cleanup(func() { tailMinSize = old })
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				s, err := st.Open(ctx, path, nil)
				if err != nil {
					b.Fatal(err)
				}
				if c := s.Context(); len(c.Messages) < 40 {
					b.Fatalf("context of %d messages", len(c.Messages))
				}
				s.Close()
			}
		})
	}
}

// TestWriteBenchSessions writes 200 sessions of 400 entries into the
// store directory $AGENTLOOP_BENCH_SESSIONS, for timing `sessions list`.
func TestWriteBenchSessions(t *testing.T) {
	dir := os.Getenv("AGENTLOOP_BENCH_SESSIONS")
	if dir == "" {
		t.Skip("set AGENTLOOP_BENCH_SESSIONS to the store directory to fill")
	}
	sub := filepath.Join(dir, CwdSlug("/bench"))
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	data := compactedTranscript(400)
	for i := range 200 {
		name := fmt.Sprintf("2026-01-01T00-00-00-000Z_0195e5a0-0000-7000-8000-%012d.jsonl", i)
		if err := os.WriteFile(filepath.Join(sub, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
