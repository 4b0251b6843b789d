package runner

import (
	"context"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// BenchmarkRun20 is a 20-round tool loop through the runner (lanes,
// compaction, repair, loop detection bound; no session), to compare with the
// agent's own BenchmarkLoop20: the runner's cost per run and per turn.
func BenchmarkRun20(b *testing.B) {
	reg := echoTools()
	r := testRunner(nil)
	b.ReportAllocs()
	for b.Loop() {
		steps := loopSteps()
		res, err := r.runParams(context.Background(), params{Prompt: "go", Model: faux.New(steps...), Tools: reg})
		if err != nil || !res.OK() {
			b.Fatal(err, res.Reason)
		}
	}
}

// BenchmarkRun20Events is BenchmarkRun20 read through Start and Events:
// the cost of handing every event out as a typed value.
func BenchmarkRun20Events(b *testing.B) {
	reg := echoTools()
	r := testRunner(nil)
	b.ReportAllocs()
	for b.Loop() {
		steps := loopSteps()
		h, err := r.Start(context.Background(), Request{Prompt: "go", Model: faux.New(steps...), Tools: reg})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, err := range h.Events() {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if res, _ := h.Wait(); !res.OK() || n < 200 {
			b.Fatal(res.Reason, n)
		}
	}
}

// echoTools is the one tool of the benchmark loops.
func echoTools() *tool.Registry {
	reg, _ := tool.NewRegistry(&tool.Func{ToolName: "echo", Run: func(_ context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult("ok"), nil
	}})
	return reg
}

// loopSteps is a 20-round tool loop, then an answer.
func loopSteps() []faux.Step {
	steps := make([]faux.Step, 0, 21)
	for i := range 20 {
		steps = append(steps, faux.Call("", "echo", map[string]any{"i": i}))
	}
	return append(steps, faux.Say("done"))
}

// BenchmarkRun20OnEvent is BenchmarkRun20 started with Start and its
// events taken by OnEvent, as the gateway does: with the queue for Events
// that nobody reads (queue) and without it (OnEventOnly).
func BenchmarkRun20OnEvent(b *testing.B) {
	for _, only := range []bool{false, true} {
		name := "queue"
		if only {
			name = "OnEventOnly"
		}
		b.Run(name, func(b *testing.B) {
			reg := echoTools()
			r := testRunner(nil)
			b.ReportAllocs()
			for b.Loop() {
				h, err := r.Start(context.Background(), Request{Prompt: "go", Model: faux.New(loopSteps()...), Tools: reg,
					OnEvent: func(Event) {}, OnEventOnly: only})
				if err != nil {
					b.Fatal(err)
				}
				if res, _ := h.Wait(); !res.OK() {
					b.Fatal(res.Reason)
				}
			}
		})
	}
}
