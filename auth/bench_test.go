package auth

import (
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/llm"
)

// BenchmarkSelect is the cost of a profile decision: lock, read and parse
// the state file.
func BenchmarkSelect(b *testing.B) {
	b.ReportAllocs()
	c := newClock()
	s, _ := Open(&Config{Path: filepath.Join(b.TempDir(), StateFileName), Clock: clock.At(c.Now)})
	s.MarkFailure("anthropic", "A", "m", llm.ReasonRateLimit)
	ids := []string{"A", "B", "C"}
	for b.Loop() {
		if id, err := s.Select("anthropic", "m", ids, "A"); err != nil || id != "B" {
			b.Fatal(id, err)
		}
	}
}

// BenchmarkMarkFailure adds the atomic write (temp file, fsync, rename).
func BenchmarkMarkFailure(b *testing.B) {
	b.ReportAllocs()
	c := newClock()
	s, _ := Open(&Config{Path: filepath.Join(b.TempDir(), StateFileName), Clock: clock.At(c.Now)})
	for b.Loop() {
		if _, err := s.MarkFailure("anthropic", "A", "m", llm.ReasonAuth); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarkGood is the success path of a run on a clean profile: a
// locked read, no write.
func BenchmarkMarkGood(b *testing.B) {
	b.ReportAllocs()
	c := newClock()
	s, _ := Open(&Config{Path: filepath.Join(b.TempDir(), StateFileName), Clock: clock.At(c.Now)})
	s.MarkGood("anthropic", "A", "m")
	for b.Loop() {
		if err := s.MarkGood("anthropic", "A", "m"); err != nil {
			b.Fatal(err)
		}
	}
}
