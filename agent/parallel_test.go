package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// parallelTool is of the parallel class (tool.ParallelClassifier).
type parallelTool struct{ *tool.Func }

func (parallelTool) ParallelCall(tool.Call) bool { return true }

// Calls of the parallel class (the agent tool) run beside each other, but
// only once the assistant message is complete: they are not read-only, so
// they never start while the model is still speaking (contract 8), and
// they are not counted read-only by the approval.
func TestParallelClassRunsTogetherAfterTheMessage(t *testing.T) {
	var mu sync.Mutex
	started := 0
	both := make(chan struct{})
	p := parallelTool{fn("spawn", false, func(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
		mu.Lock()
		started++
		if started == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both: // the other call is running too
			return tool.TextResult("ok"), nil
		case <-time.After(5 * time.Second):
			return tool.Result{}, errors.New("ran alone")
		}
	})}
	reg := registry(t, p)
	if reg.ReadOnly(tool.Call{Name: "spawn"}) || reg.ConcurrencySafe(tool.Call{Name: "spawn"}) || !reg.Parallel(tool.Call{Name: "spawn"}) {
		t.Fatal("the parallel class is read-only or concurrency-safe")
	}
	m := faux.New(faux.Reply(faux.ToolCall("spawn", map[string]any{"n": 1}), faux.ToolCall("spawn", map[string]any{"n": 2})).WithTail(100*time.Millisecond), faux.Say("done"))
	a := New(Config{Model: m, Tools: reg})
	evs := runAll(t, a, context.Background(), llm.UserText("go"))
	msgEnd, results := -1, 0
	for i, ev := range evs {
		switch ev.Type {
		case EventMessageEnd:
			if ev.Message != nil && ev.Message.Role == llm.RoleAssistant && msgEnd < 0 {
				msgEnd = i
			}
		case EventToolExecutionStart:
			if msgEnd < 0 {
				t.Fatalf("a parallel call started at event %d, before its message ended", i)
			}
		case EventToolExecutionEnd:
			if ev.Result.IsError {
				t.Fatalf("call failed: %s", ev.Result.Text())
			}
			results++
		}
	}
	if results != 2 {
		t.Fatalf("%d results", results)
	}
}
