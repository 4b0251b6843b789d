package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// TestRandomRuns drives the scheduler with random scripts (safe, exclusive,
// failing, bash, invalid and unknown calls; stream errors; aborts; both
// execution modes; random tool durations in fake time) and checks the
// invariants that must hold whatever happens: every call paired exactly
// once and in the model's order, one start and one end event per call,
// exclusive calls alone and never before their message completed.
func TestRandomRuns(t *testing.T) {
	for seed := range uint64(150) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { randomRun(t, seed) })
		})
	}
}

func randomRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var mu sync.Mutex
	active, exclActive := 0, 0
	msgDone := false
	var problems []string
	note := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	durations := map[string]time.Duration{}
	mk := func(name string, safe, fail bool) *tool.Func {
		return fn(name, safe, func(ctx context.Context, c tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			mu.Lock()
			if exclActive > 0 || !safe && active > 0 {
				note("%s started beside an exclusive call or while others ran", c.ID)
			}
			if !safe && !msgDone {
				note("exclusive %s started before its message completed", c.ID)
			}
			active++
			if !safe {
				exclActive++
			}
			d := durations[c.ID]
			mu.Unlock()
			defer func() {
				mu.Lock()
				active--
				if !safe {
					exclActive--
				}
				mu.Unlock()
			}()
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
			if fail {
				return tool.ErrorResult("exit status 1"), nil
			}
			return tool.TextResult("ok"), nil
		})
	}
	tools := registry(t, mk("read", true, false), mk("write", false, false), mk("bash", true, true), mk("flaky", true, true))
	names := []string{"read", "read", "write", "bash", "flaky", "nope", "invalid"}
	var steps []faux.Step
	turns := 1 + rng.IntN(4)
	for turn := range turns {
		var blocks []llm.Content
		if rng.IntN(2) == 0 {
			blocks = append(blocks, faux.Text("thinking out loud"))
		}
		for k := range rng.IntN(5) {
			id := fmt.Sprintf("t%d_%d", turn, k)
			durations[id] = time.Duration(rng.IntN(5)) * time.Second
			switch name := names[rng.IntN(len(names))]; name {
			case "invalid":
				blocks = append(blocks, llm.Content{Type: llm.ContentToolCall, ID: id, Name: "read", Arguments: []byte(`"{\"pa"`)})
			default:
				blocks = append(blocks, tc(id, name, nil))
			}
			if rng.IntN(3) == 0 {
				blocks = append(blocks, faux.Text("more words"))
			}
		}
		s := faux.Reply(blocks...).WithDelay(time.Duration(rng.IntN(3)) * 100 * time.Millisecond)
		if rng.IntN(6) == 0 {
			s = s.WithError(faux.Failure{Reason: llm.ReasonOverloaded})
		}
		steps = append(steps, s)
	}
	steps = append(steps, faux.Say("done"))
	m := faux.New(steps...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if rng.IntN(4) == 0 {
		time.AfterFunc(time.Duration(rng.IntN(4000))*time.Millisecond, cancel)
	}
	a := New(Config{Model: m, Tools: tools, DisableStreamingTools: rng.IntN(3) == 0, MaxConcurrentTools: 1 + rng.IntN(3)})
	starts, ends := map[string]int{}, map[string]int{}
	a.Subscribe(func(e Event) {
		switch e.Type {
		case EventMessageStart:
			if e.Message.Role == llm.RoleAssistant {
				mu.Lock()
				msgDone = false
				mu.Unlock()
			}
		case EventMessageEnd:
			if e.Message.Role == llm.RoleAssistant {
				mu.Lock()
				msgDone = true
				mu.Unlock()
			}
		case EventToolExecutionStart:
			starts[e.ToolCallID]++
		case EventToolExecutionEnd:
			ends[e.ToolCallID]++
		}
	})
	runAll(t, a, ctx, llm.UserText("go"))
	msgs := a.Messages()
	checkPairing(t, msgs)
	for i, msg := range msgs {
		if msg.Role != llm.RoleAssistant {
			continue
		}
		for k, c := range msg.ToolCalls() {
			if j := i + 1 + k; j >= len(msgs) || msgs[j].ToolCallID != c.ID {
				t.Errorf("result %d of message %d is not for %s", k, i, c.ID)
			}
			if starts[c.ID] != 1 || ends[c.ID] != 1 {
				t.Errorf("call %s: %d starts, %d ends", c.ID, starts[c.ID], ends[c.ID])
			}
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}
