package faux_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// BenchmarkStream plays one reply of about 400 characters of text and a
// tool call, the shape of a typical agent turn.
func BenchmarkStream(b *testing.B) {
	step := faux.Reply(faux.Text(strings.Repeat("a few words of reply ", 20)),
		faux.ToolCall("read", map[string]any{"path": "internal/some/file.go", "offset": 1, "limit": 200}))
	req := userReq("q")
	m := faux.New(step)
	m.Repeat = true
	b.ReportAllocs()
	for b.Loop() {
		for ev := range m.Stream(context.Background(), req) {
			if ev.Type == llm.EventError {
				b.Fatal(ev.Err)
			}
		}
	}
}
