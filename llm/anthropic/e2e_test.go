package anthropic_test

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

func sseEvent(typ string, v any) string {
	b, _ := json.Marshal(v)
	return "event: " + typ + "\ndata: " + string(b) + "\n\n"
}

// A scripted server drives three rounds of tool calls through the agent
// loop and then answers; every request must carry the earlier calls and
// their results, paired by id.
func TestAgentToolLoop(t *testing.T) {
	const rounds = 3
	var mu sync.Mutex
	var problems []string
	problem := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req sentMessages
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, 400)
			return
		}
		results := 0
		pending := map[string]bool{}
		for _, m := range req.Messages {
			for _, c := range m.Content {
				switch c.Type {
				case "tool_use":
					pending[c.ID] = true
				case "tool_result":
					if !pending[c.ToolUseID] {
						problem("result without call: " + c.ToolUseID)
					}
					delete(pending, c.ToolUseID)
					if len(c.Content) == 0 || c.Content[0].Text != fmt.Sprintf("count=%d", results+1) {
						problem(fmt.Sprintf("result %d says %v", results+1, c.Content))
					}
					results++
				}
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, sseEvent("message_start", map[string]any{"type": "message_start", "message": map[string]any{"usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}}))
		fmt.Fprint(w, sseEvent("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}}))
		stop := "end_turn"
		if results < rounds {
			stop = "tool_use"
			fmt.Fprint(w, sseEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": fmt.Sprintf("Round %d.", results+1)}}))
			fmt.Fprint(w, sseEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
			fmt.Fprint(w, sseEvent("content_block_start", map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_r%d", results+1), "name": "count", "input": map[string]any{}}}))
			fmt.Fprint(w, sseEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1, "delta": map[string]string{"type": "input_json_delta", "partial_json": fmt.Sprintf(`{"n": %d}`, results+1)}}))
			fmt.Fprint(w, sseEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1}))
		} else {
			fmt.Fprint(w, sseEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": "All counted."}}))
			fmt.Fprint(w, sseEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
		}
		fmt.Fprint(w, sseEvent("message_delta", map[string]any{"type": "message_delta", "delta": map[string]string{"stop_reason": stop}, "usage": map[string]int{"output_tokens": 5}}))
		fmt.Fprint(w, sseEvent("message_stop", map[string]string{"type": "message_stop"}))
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
	if strings.Join(calls, " ") != "toolu_r1 toolu_r2 toolu_r3" {
		t.Errorf("tool calls %v", calls)
	}
	msgs := a.Messages()
	if last := msgs[len(msgs)-1]; last.Text() != "All counted." || last.Usage == nil || last.Usage.Output != 5 {
		t.Errorf("last message %+v", last)
	}
	if end.Usage.Input != 40 || end.Usage.Output != 20 {
		t.Errorf("run usage %+v", end.Usage)
	}
	if len(problems) > 0 {
		t.Errorf("the server saw: %v", problems)
	}
}
