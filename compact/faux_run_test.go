package compact_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// memRecorder keeps what the Compactor asks a session to store.
type memRecorder struct {
	mu          sync.Mutex
	compactions []compact.CompactionRecord
	truncations []compact.Truncation
}

func (r *memRecorder) RecordCompaction(_ context.Context, rec compact.CompactionRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.compactions = append(r.compactions, rec)
	return nil
}

func (r *memRecorder) RecordTruncations(_ context.Context, recs []compact.Truncation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.truncations = append(r.truncations, recs...)
	return nil
}

// pairingError says what breaks pairing in msgs, or "".
func pairingError(msgs []llm.Message) string {
	open := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleAssistant:
			if len(open) > 0 {
				return fmt.Sprintf("message %d: assistant before the results of %v", i, open)
			}
			if !m.StopReason.Failed() {
				for _, c := range m.ToolCalls() {
					open[c.ID] = true
				}
			}
		case llm.RoleToolResult:
			if !open[m.ToolCallID] {
				return fmt.Sprintf("message %d: result %s answers no open call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case llm.RoleUser:
			if len(open) > 0 {
				return fmt.Sprintf("message %d: user message before the results of %v", i, open)
			}
		}
	}
	return ""
}

// TestFauxLongRun drives the agent loop for 300 tool turns with 20 KB tool
// outputs on a 32,000-token model that refuses any prompt over its window:
// the run must finish without one context-overflow error, with compaction
// applied and pairing intact in every request.
func TestFauxLongRun(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	for _, tt := range []struct {
		name    string
		window  int
		compact bool // whether 300 turns need a summary
		fail    bool // the summariser always fails
	}{
		{"32K", 32_000, true, false},
		{"16K", 16_000, true, false},
		{"200K", 200_000, false, false},
		{"32K summariser down", 32_000, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) { longRun(t, tt.window, tt.compact, tt.fail) })
	}
}

func longRun(t *testing.T, window int, wantCompaction, failSummary bool) {
	const turns = 300
	output := strings.Repeat("0123456789 abcdefghij klmnopqrst uvwxyz ABCDEFGHIJ KLMN\n", 20_000/56)

	var mu sync.Mutex
	var problems []string
	maxPrompt, calls := 0, 0
	main := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if p := pairingError(req.Messages); p != "" {
			problems = append(problems, fmt.Sprintf("call %d: %s", calls, p))
		}
		maxPrompt = max(maxPrompt, faux.EstimateRequest(req))
		if calls > turns {
			return faux.Say("All files read.")
		}
		return faux.Call("Reading the next file.", "read", map[string]string{"path": fmt.Sprintf("file%03d.txt", calls)})
	}))
	main.Repeat = true
	main.Info.ContextWindow = window

	summaries := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
		if len(req.Tools) != 0 {
			mu.Lock()
			problems = append(problems, "summariser request carried tools")
			mu.Unlock()
		}
		if failSummary {
			return faux.Refuse(llm.ReasonOverloaded, 529, "overloaded")
		}
		return faux.Say("## Goal\nRead every file.\n\n## Progress\n### Done\nRead files so far.\n\n## Next Steps\nRead the next file.")
	}))
	summaries.Repeat = true
	summaries.Info.ContextWindow = window

	read := &tool.Func{ToolName: "read", ToolDescription: "Read a file.", Concurrent: true,
		Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		Run: func(_ context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			return tool.TextResult(output), nil
		}}
	reg, err := tool.NewRegistry(read)
	if err != nil {
		t.Fatal(err)
	}
	rec := &memRecorder{}
	var events []compact.Event
	c, err := compact.New(compact.Config{
		Window:       window,
		SystemPrompt: "You read files.",
		Tools:        reg.Specs(),
		// Retries wait on the injected sleep: the test never sleeps.
		Summarizer: &compact.Summarizer{Model: summaries, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
		Recorder:   rec,
		OnEvent:    func(e compact.Event) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	a := agent.New(agent.Config{
		Model: main, Tools: reg, SystemPrompt: "You read files.", MaxTurns: -1,
		TransformContext: c.TransformContext,
		Hooks:            agent.Hooks{ToolResultPersist: c.PersistToolResult},
	})
	var end *agent.Event
	for ev, err := range a.Run(context.Background(), llm.UserText("Read file001.txt to file300.txt.")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventAgentEnd {
			e := ev
			end = &e
		}
	}
	if end == nil || end.Reason != agent.ReasonStop || end.Err != nil {
		t.Fatalf("run ended %+v", end)
	}
	if calls != turns+1 {
		t.Errorf("%d model calls, want %d", calls, turns+1)
	}
	if maxPrompt > window {
		t.Errorf("largest prompt %d tokens > window %d", maxPrompt, window)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if wantCompaction && len(rec.compactions) == 0 {
		t.Error("no compaction was recorded")
	}
	// Each result is shortened or cleared a bounded number of times, not
	// again on every call.
	if len(rec.truncations) > 3*turns {
		t.Errorf("%d truncation records for %d results", len(rec.truncations), turns)
	}
	if p := pairingError(a.Messages()); p != "" {
		t.Errorf("full history: %s", p)
	}
	fallbacks := 0
	for _, e := range events {
		if e.Type == compact.EventFallback || e.Type == compact.EventOverBudget {
			fallbacks++
		}
	}
	if failSummary {
		if fallbacks == 0 {
			t.Error("the summariser failed and no fallback was reported")
		}
		for _, r := range rec.compactions {
			if !r.Fallback || r.FallbackErr == nil {
				t.Errorf("compaction %+v is not marked as a fallback", r)
			}
		}
	}
	t.Logf("%d model calls, largest prompt %d tokens, %d compactions, %d truncations, %d fallback/over-budget events, %d summariser calls",
		calls, maxPrompt, len(rec.compactions), len(rec.truncations), fallbacks, summaries.Calls())
}
