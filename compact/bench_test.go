package compact

import (
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// history returns n messages of a tool-using conversation: user lines,
// assistant calls, 600-byte results (about 300,000 tokens in all).
func history(n int) []llm.Message {
	msgs := make([]llm.Message, 0, n)
	for i := 0; len(msgs) < n; i++ {
		id := fmt.Sprintf("call%d", i)
		msgs = append(msgs, user("please continue with the next step"),
			assistant("reading", call(id, "read", `{"path":"src/file.go"}`)),
			result(id, "read", rep("some output line\n", 35)))
	}
	return msgs[:n]
}

// BenchmarkPrecheck10k measures the estimate and the route decision over a
// 10,000-message history (budget: under 5 ms).
func BenchmarkPrecheck10k(b *testing.B) {
	msgs := history(10_000)
	p := Prompt{System: rep("s", 8_000), Messages: msgs}
	budget := NewBudget(200_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		d := Precheck(p, budget)
		if d.Route == "" {
			b.Fatal("no route")
		}
	}
}

// BenchmarkTransformFits measures TransformContext on a 10,000-message
// history that fits (a 2M window): the cost every model call pays.
func BenchmarkTransformFits(b *testing.B) {
	msgs := history(10_000)
	c, err := New(Config{Window: 2_000_000})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.TransformContext(b.Context(), msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransformCompacted measures TransformContext when a compaction
// and truncations are applied to a 10,000-message history on every call.
func BenchmarkTransformCompacted(b *testing.B) {
	msgs := history(10_000)
	c, err := New(Config{Window: 200_000, Summarizer: &Summarizer{Model: &fakeModel{}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.TransformContext(b.Context(), msgs); err != nil {
		b.Fatal(err)
	}
	if c.st.summary == "" {
		b.Fatal("no compaction happened")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.TransformContext(b.Context(), msgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTruncateText(b *testing.B) {
	text := rep("a line of tool output that goes on\n", 10_000)
	b.ReportAllocs()
	for b.Loop() {
		TruncateText(text, 40_000, TruncateOptions{})
	}
}

// BenchmarkTransformSnipped measures TransformContext when a snip is
// applied to a 10,000-message history on every call.
func BenchmarkTransformSnipped(b *testing.B) {
	msgs := history(10_000)
	c, err := New(Config{Window: 200_000, Snip: SnipOptions{TailTokens: 50_000}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.TransformContext(b.Context(), msgs); err != nil {
		b.Fatal(err)
	}
	if c.st.snipTo == 0 || c.st.summary != "" {
		b.Fatal("no snip alone happened")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.TransformContext(b.Context(), msgs); err != nil {
			b.Fatal(err)
		}
	}
}
