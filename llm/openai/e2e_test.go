package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// A scripted server drives three rounds of tool calls through the agent
// loop and then answers; every request must carry the earlier calls and
// their results, paired by id.
func TestAgentToolLoop(t *testing.T) {
	const rounds = 3
	var mu sync.Mutex
	var problems []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
				Content    any    `json:"content"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, 400)
			return
		}
		results := 0
		pending := map[string]bool{}
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				pending[c.ID] = true
			}
			if m.Role == "tool" {
				if !pending[m.ToolCallID] {
					mu.Lock()
					problems = append(problems, "result without call: "+m.ToolCallID)
					mu.Unlock()
				}
				delete(pending, m.ToolCallID)
				if !strings.Contains(fmt.Sprint(m.Content), fmt.Sprintf("count=%d", results+1)) {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("result %d says %v", results+1, m.Content))
					mu.Unlock()
				}
				results++
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if results < rounds {
			id := fmt.Sprintf("call_r%d", results+1)
			fmt.Fprint(w, chunkJSON(map[string]any{"role": "assistant", "content": fmt.Sprintf("Round %d.", results+1)}, nil))
			fmt.Fprint(w, argsDelta(0, id, "count", ""))
			fmt.Fprint(w, argsDelta(0, "", "", fmt.Sprintf(`{"n": %d}`, results+1)))
			fmt.Fprint(w, chunkJSON(map[string]any{}, "tool_calls"))
		} else {
			fmt.Fprint(w, chunkJSON(map[string]any{"role": "assistant", "content": "All counted."}, nil))
			fmt.Fprint(w, chunkJSON(map[string]any{}, "stop"))
		}
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	var calls []string
	counter := &tool.Func{
		ToolName: "count", ToolDescription: "Counts.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		Run: func(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			var a struct{ N int }
			json.Unmarshal(call.Args, &a)
			calls = append(calls, call.ID)
			return tool.TextResult(fmt.Sprintf("count=%d", a.N)), nil
		},
	}
	reg, err := tool.NewRegistry(counter)
	if err != nil {
		t.Fatal(err)
	}
	a := agent.New(agent.Config{Model: newModel(srv, 0), Tools: reg, SystemPrompt: "Count."})
	var end agent.Event
	for ev, err := range a.Run(context.Background(), llm.UserText("count to three")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventAgentEnd {
			end = ev
		}
	}
	if end.Reason != agent.ReasonStop || end.Err != nil {
		t.Fatalf("run ended %q: %v", end.Reason, end.Err)
	}
	if strings.Join(calls, " ") != "call_r1 call_r2 call_r3" {
		t.Errorf("tool calls %v", calls)
	}
	msgs := a.Messages()
	if last := msgs[len(msgs)-1]; last.Text() != "All counted." || last.Usage == nil || last.Usage.Input != 10 {
		t.Errorf("last message %+v", last)
	}
	if end.Usage.Input != 40 || end.Usage.Output != 20 {
		t.Errorf("run usage %+v", end.Usage)
	}
	if len(problems) > 0 {
		t.Errorf("the server saw: %v", problems)
	}
}
