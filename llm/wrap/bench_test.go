package wrap_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/wrap"
)

// BenchmarkWrap measures what the four layers add to a 1,000-delta text
// reply with two calls: compare with BenchmarkBare (allocs/op / ~1,010
// events).
func BenchmarkWrap(b *testing.B) {
	bench(b, wrap.Config{Text: []wrap.Replace{{Old: "<|im_end|>", New: ""}}, Repair: true, Promote: true, Normalize: true})
}

// BenchmarkBare streams the same reply without middleware.
func BenchmarkBare(b *testing.B) { bench(b, wrap.Config{}) }

func bench(b *testing.B, cfg wrap.Config) {
	chunks := make([]string, 1000)
	for i := range chunks {
		chunks[i] = fmt.Sprintf(" token%d", i%100)
	}
	s := scripted{blocks: []blk{text(chunks...), call("c1", "read", `{"path": "a",}`), call("c2", "functions.bash", `{"command": "ls"}`)}}
	m := wrap.Wrap(s, cfg)
	req := toolsRequest()
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		for ev, err := range m.Stream(context.Background(), req) {
			if err != nil || ev.Type == llm.EventError {
				b.Fatal(err)
			}
			events++
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkPromoteLongCall streams a 60 KB call written as text in 6,000
// deltas: the held text must not cost quadratic time.
func BenchmarkPromoteLongCall(b *testing.B) {
	chunks := []string{`<tool_call>{"name": "bash", "arguments": {"command": "`}
	for i := 0; i < 6000; i++ {
		chunks = append(chunks, "echo 12345")
	}
	chunks = append(chunks, `"}}</tool_call>`)
	m := wrap.PromoteTextToolCalls()(scripted{blocks: []blk{text(chunks...)}})
	req := toolsRequest()
	b.ReportAllocs()
	for b.Loop() {
		for ev, err := range m.Stream(context.Background(), req) {
			if err != nil || ev.Type == llm.EventError {
				b.Fatal(err)
			}
			if ev.Type == llm.EventDone && len(ev.Message.ToolCalls()) != 1 {
				b.Fatal("not promoted")
			}
		}
	}
}
