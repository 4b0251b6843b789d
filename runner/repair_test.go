package runner_test

import (
	"context"
	"encoding/json"
	"iter"
	"strconv"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// capture records the messages of every request it forwards.
type capture struct {
	llm.Model
	mu   sync.Mutex
	reqs [][]llm.Message
}

func (c *capture) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	c.mu.Lock()
	c.reqs = append(c.reqs, append([]llm.Message(nil), req.Messages...))
	c.mu.Unlock()
	return c.Model.Stream(ctx, req)
}

// The runner repairs the history before each model call on what was
// appended (session.Repairer). A long run — a loaded history with an
// aborted turn whose calls never got results, then 60 tool turns whose
// call ids repeat every turn, calls to a tool that does not exist, results
// with details — sends on every turn what a from-scratch Repair of the same
// history gives, byte for byte.
func TestRepairPerTurnMatchesFullRepair(t *testing.T) {
	now := func() int64 { return 7 }
	echo := tool.New("echo", "Echo the text.", func(_ context.Context, in struct{ Text string }, _ func(tool.Partial)) (tool.Result, error) {
		return tool.Result{Content: []llm.Content{llm.Text(in.Text)}, Details: json.RawMessage(`{"n":1}`)}, nil
	})
	reg, err := tool.NewRegistry(echo)
	if err != nil {
		t.Fatal(err)
	}
	prior := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("before")}, Timestamp: 1},
		{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall("call_0", "echo", json.RawMessage(`{"text":"x"}`)),
			llm.ToolCall("call_1", "echo", json.RawMessage(`{"text":"y"}`))}, StopReason: llm.StopReasonAborted, Timestamp: 2},
		{Role: llm.RoleToolResult, ToolCallID: "ghost", ToolName: "echo", Content: []llm.Content{llm.Text("orphan")}, Timestamp: 3},
	}
	var steps []faux.Step
	for i := range 60 {
		name := "echo"
		if i%7 == 3 {
			name = "nosuch"
		}
		steps = append(steps, faux.Reply(faux.ToolCallID("call_0", name, map[string]string{"text": strconv.Itoa(i)})))
	}
	steps = append(steps, faux.Say("done"))
	model := &capture{Model: faux.New(steps...)}
	r := newRunner(t, runner.Config{Now: now})
	res, err := r.Run(context.Background(), runner.Request{Prompt: "go", History: prior, Model: model,
		Info: llm.ModelInfo{Provider: "faux", ID: "faux", API: llm.APIOpenAICompletions}, Tools: reg, MaxTurns: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(model.reqs) != 61 {
		t.Fatalf("%d requests, want 61 (%s)", len(model.reqs), res.Message)
	}
	// The history before request n is the prior history, then what the run
	// added up to its n-th assistant message.
	raw := append(append([]llm.Message(nil), prior...), res.Messages...)
	n := 0
	for i := len(prior); i <= len(raw); i++ {
		if i < len(raw) && raw[i].Role != llm.RoleAssistant {
			continue
		}
		if n == len(model.reqs) {
			break
		}
		want, _ := json.Marshal(session.Repair(raw[:i], session.RepairOptions{API: llm.APIOpenAICompletions, Now: now}))
		got, _ := json.Marshal(model.reqs[n])
		if string(got) != string(want) {
			t.Fatalf("request %d differs from a full repair of its history:\n got %s\nwant %s", n, got, want)
		}
		n++
	}
	if n != len(model.reqs) {
		t.Fatalf("compared %d of %d requests", n, len(model.reqs))
	}
}
