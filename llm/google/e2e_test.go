package google_test

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

func chunkLine(v any) string {
	b, _ := json.Marshal(v)
	return "data: " + string(b) + "\r\n\r\n"
}

// A scripted server drives three rounds of tool calls through the agent
// loop and then answers. Every request must replay the earlier calls with
// the thought signatures the server gave them, each call followed by its
// function response with the right result.
func TestAgentToolLoop(t *testing.T) {
	const rounds = 3
	var mu sync.Mutex
	var problems []string
	problem := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Goog-Api-Key") != testKey || strings.Contains(r.URL.RawQuery, "key=") {
			problem("key not in the x-goog-api-key header alone")
		}
		var req struct {
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					Text             *string `json:"text"`
					Thought          bool    `json:"thought"`
					ThoughtSignature string  `json:"thoughtSignature"`
					FunctionCall     *struct {
						Name string          `json:"name"`
						Args json.RawMessage `json:"args"`
					} `json:"functionCall"`
					FunctionResponse *struct {
						Name     string            `json:"name"`
						Response map[string]string `json:"response"`
					} `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"error":{"code":400,"message":"bad json","status":"INVALID_ARGUMENT"}}`, 400)
			return
		}
		calls, results, thoughts := 0, 0, 0
		for i, c := range req.Contents {
			if i > 0 && req.Contents[i-1].Role == c.Role {
				problem("two contents in a row with role " + c.Role)
			}
			for _, p := range c.Parts {
				switch {
				case p.FunctionCall != nil:
					calls++
					if want := fmt.Sprintf("sig-r%d", calls); p.ThoughtSignature != want {
						problem(fmt.Sprintf("call %d replayed with signature %q, want %q", calls, p.ThoughtSignature, want))
					}
					if want := fmt.Sprintf(`{"n":%d}`, calls); string(p.FunctionCall.Args) != want {
						problem(fmt.Sprintf("call %d args %s", calls, p.FunctionCall.Args))
					}
				case p.FunctionResponse != nil:
					results++
					if results != calls {
						problem(fmt.Sprintf("response %d after %d calls", results, calls))
					}
					if got := p.FunctionResponse.Response["output"]; got != fmt.Sprintf("count=%d", results) {
						problem(fmt.Sprintf("response %d says %q", results, got))
					}
				case p.Thought:
					thoughts++
					if p.ThoughtSignature != fmt.Sprintf("think-r%d", thoughts) {
						problem(fmt.Sprintf("thought %d replayed with signature %q", thoughts, p.ThoughtSignature))
					}
				}
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		usage := map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5}
		part := func(p map[string]any, finish string) string {
			cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{p}}, "index": 0}
			if finish != "" {
				cand["finishReason"] = finish
			}
			return chunkLine(map[string]any{"candidates": []any{cand}, "usageMetadata": usage})
		}
		if results < rounds {
			n := results + 1
			fmt.Fprint(w, part(map[string]any{"text": fmt.Sprintf("Counting %d.", n), "thought": true, "thoughtSignature": fmt.Sprintf("think-r%d", n)}, ""))
			fmt.Fprint(w, part(map[string]any{"text": fmt.Sprintf("Round %d.", n)}, ""))
			fmt.Fprint(w, part(map[string]any{"functionCall": map[string]any{"name": "count", "args": map[string]int{"n": n}}, "thoughtSignature": fmt.Sprintf("sig-r%d", n)}, "STOP"))
		} else {
			fmt.Fprint(w, part(map[string]any{"text": "All counted."}, ""))
			fmt.Fprint(w, part(map[string]any{"text": ""}, "STOP"))
		}
	}))
	defer srv.Close()

	var calls []string
	counter := &tool.Func{
		ToolName: "count", ToolDescription: "Counts.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`),
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
	a := agent.New(agent.Config{Model: newModel(srv, 0), Tools: reg, SystemPrompt: "Count.", Options: llm.Options{Thinking: llm.ThinkingLow}})
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
	if len(calls) != rounds || calls[0] == calls[1] || calls[1] == calls[2] {
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
