package agent

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// BenchmarkLoop20 runs the 20-round tool loop of the golden test (21 model
// calls on faux, no delays). ns/turn and allocs/turn include faux's own
// streaming (a few deltas per turn) and the tool's work.
func BenchmarkLoop20(b *testing.B) {
	_, tools := loop20(b)
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for b.Loop() {
		m, _ := loop20(b)
		a := New(Config{Model: m, Tools: tools})
		for ev := range a.Run(context.Background(), llm.UserText("run the plan")) {
			if ev.Type == EventAgentEnd && ev.Reason != ReasonStop {
				b.Fatalf("run ended %s: %v", ev.Reason, ev.Err)
			}
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	turns := float64(b.N * 21)
	b.ReportMetric(float64(elapsed.Nanoseconds())/turns, "ns/turn")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/turns, "allocs/turn")
}

// BenchmarkToolStartLatency measures the time from a toolcall_end leaving
// the model's stream to the tool's Execute starting, while the model keeps
// the message open. It reports the median.
func BenchmarkToolStartLatency(b *testing.B) {
	var t0 time.Time
	started := make(chan time.Time, 1)
	probe := &tool.Func{ToolName: "probe", Concurrent: true,
		Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			started <- time.Now()
			return tool.TextResult("ok"), nil
		}}
	var lat []time.Duration
	model := llm.ModelFunc(func(ctx context.Context, _ *llm.Request) iter.Seq2[llm.Event, error] {
		return func(yield func(llm.Event, error) bool) {
			msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall("c", "probe", nil)}}
			if !yield(llm.Event{Type: llm.EventStart, Partial: &msg}, nil) ||
				!yield(llm.Event{Type: llm.EventToolCallStart, Partial: &msg}, nil) {
				return
			}
			block := msg.Content[0]
			t0 = time.Now()
			if !yield(llm.Event{Type: llm.EventToolCallEnd, Block: &block, Partial: &msg}, nil) {
				return
			}
			select { // the model is still talking while the tool starts
			case t1 := <-started:
				lat = append(lat, t1.Sub(t0))
			case <-ctx.Done():
				return
			}
			msg.StopReason = llm.StopReasonToolUse
			yield(llm.Event{Type: llm.EventDone, Reason: msg.StopReason, Message: &msg, Partial: &msg}, nil)
		}
	})
	b.ReportAllocs()
	a := New(Config{Model: model, Tools: registry(b, probe), MaxTurns: b.N})
	for ev := range a.Run(context.Background(), llm.UserText("go")) {
		if ev.Type == EventAgentEnd && ev.Reason != ReasonMaxTurns {
			b.Fatalf("run ended %s: %v", ev.Reason, ev.Err)
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "median-ns")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	}
}

// BenchmarkTurnOverhead measures the loop's own cost per turn (one tool
// call, a minimal model that answers at once, a tool that returns at once)
// over histories of different lengths: the cost must not grow with the
// transcript.
func BenchmarkTurnOverhead(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			hist := make([]llm.Message, 0, n)
			for i := range n {
				if i%2 == 0 {
					hist = append(hist, llm.UserText("an earlier question with a few words in it"))
				} else {
					hist = append(hist, llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("an earlier answer")}, StopReason: llm.StopReasonStop})
				}
			}
			model := llm.ModelFunc(func(ctx context.Context, _ *llm.Request) iter.Seq2[llm.Event, error] {
				return func(yield func(llm.Event, error) bool) {
					msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall("c", "nop", nil)}}
					block := msg.Content[0]
					if !yield(llm.Event{Type: llm.EventStart, Partial: &msg}, nil) ||
						!yield(llm.Event{Type: llm.EventToolCallStart, Partial: &msg}, nil) ||
						!yield(llm.Event{Type: llm.EventToolCallEnd, Block: &block, Partial: &msg}, nil) {
						return
					}
					msg.StopReason = llm.StopReasonToolUse
					yield(llm.Event{Type: llm.EventDone, Reason: msg.StopReason, Message: &msg, Partial: &msg}, nil)
				}
			})
			nop := &tool.Func{ToolName: "nop", Concurrent: true,
				Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
					return tool.TextResult("ok"), nil
				}}
			a := New(Config{Model: model, Tools: registry(b, nop), Messages: hist, MaxTurns: b.N})
			b.ReportAllocs()
			b.ResetTimer()
			for ev := range a.Run(context.Background(), llm.UserText("go")) {
				if ev.Type == EventAgentEnd && ev.Reason != ReasonMaxTurns {
					b.Fatalf("run ended %s: %v", ev.Reason, ev.Err)
				}
			}
		})
	}
}
