package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/openai"
	"github.com/agentloop/agentloop/tool"
)

func newResponses(srv *httptest.Server) *openai.ResponsesModel {
	return openai.NewResponses(openai.Config{
		Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai", API: llm.APIOpenAIResponses,
			MaxTokens: 32000, Reasoning: true, Cost: llm.Prices{Input: 1.25, Output: 10, CacheRead: 0.125}},
		APIKey: testKey, BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(),
	})
}

func TestResponsesFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		types   string
		check   func(t *testing.T, m *llm.Message)
	}{
		{"responses_text.sse", "start text_start text_delta text_delta text_end done", func(t *testing.T, m *llm.Message) {
			if m.Text() != "Hello, world." || m.Content[0].TextSignature != "msg_1" || m.StopReason != llm.StopReasonStop {
				t.Errorf("message %+v", m)
			}
			if u := m.Usage; u.Input != 21 || u.CacheRead != 2000 || u.Output != 12 || u.Total != 2033 || u.Cost.Total == 0 {
				t.Errorf("usage %+v", *u)
			}
			if m.API != "openai-responses" {
				t.Errorf("api %q", m.API)
			}
		}},
		{"responses_tools.sse", "start thinking_start thinking_delta thinking_delta thinking_delta thinking_end toolcall_start toolcall_delta toolcall_delta toolcall_end toolcall_start toolcall_end done", func(t *testing.T, m *llm.Message) {
			th := m.Content[0]
			if th.Thinking != "Need the file.\n\nAnd a listing." || !strings.Contains(th.ThinkingSignature, `"encrypted_content":"gAAAAABenc"`) {
				t.Errorf("thinking %+v", th)
			}
			calls := m.ToolCalls()
			if len(calls) != 2 || calls[0].ID != "call_A|fc_1" || string(calls[0].Arguments) != `{"path": "README.md"}` ||
				calls[1].ID != "call_B|fc_2" || string(calls[1].Arguments) != `{}` || m.StopReason != llm.StopReasonToolUse {
				t.Errorf("calls %+v stop %q", calls, m.StopReason)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			var c capture
			srv := serve(t, 200, nil, fixture(t, tt.fixture), &c)
			r := collect(t, newResponses(srv), context.Background(), simpleRequest())
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if got := typesString(r.Types); got != tt.types {
				t.Errorf("events\n got %s\nwant %s", got, tt.types)
			}
			if c.Path != "/v1/responses" {
				t.Errorf("path %q", c.Path)
			}
			tt.check(t, r.Msg)
		})
	}
}

func TestResponsesFailures(t *testing.T) {
	text := fixture(t, "responses_text.sse")
	tests := []struct {
		name, body, words, text string
	}{
		{"response.failed", fixture(t, "responses_failed.sse"), "overloaded", "Partial answ"},
		{"error event", strings.Split(text, "event: response.output_text.done")[0] +
			"event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached for requests\",\"param\":null}\n\n", "Rate limit reached", "Hello, world."},
		{"cut before response.completed", strings.Split(text, "event: response.completed")[0], "ended before", "Hello, world."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, 200, nil, tt.body, nil)
			r := collect(t, newResponses(srv), context.Background(), simpleRequest())
			var pe *llm.ProviderError
			if r.Bare || !errors.As(r.Err, &pe) || !strings.Contains(pe.Error(), tt.words) {
				t.Fatalf("bare %v err %v", r.Bare, r.Err)
			}
			if pe.Reason == llm.ReasonUnknown || r.Msg.StopReason != llm.StopReasonError || r.Msg.Text() != tt.text {
				t.Errorf("reason %q stop %q text %q", pe.Reason, r.Msg.StopReason, r.Msg.Text())
			}
		})
	}
	t.Run("429", func(t *testing.T) {
		srv := serve(t, 429, map[string]string{"Retry-After": "2", "Content-Type": "application/json"},
			`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, nil)
		r := collect(t, newResponses(srv), context.Background(), simpleRequest())
		var pe *llm.ProviderError
		if !r.Bare || !errors.As(r.Err, &pe) || pe.Reason != llm.ReasonRateLimit || pe.RetryAfter.Seconds() != 2 {
			t.Fatalf("bare %v err %v", r.Bare, r.Err)
		}
	})
}

// The next turn carries the reasoning item verbatim, the calls with their
// ids, and the results by call id; store is off.
func TestResponsesRequest(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "responses_text.sse"), &c)
	m := newResponses(srv)
	// Build a history from the tools fixture's reply.
	srv2 := serve(t, 200, nil, fixture(t, "responses_tools.sse"), nil)
	reply := collect(t, newResponses(srv2), context.Background(), simpleRequest()).Msg
	req := &llm.Request{
		SystemPrompt: "sys",
		Options:      llm.Options{Thinking: llm.ThinkingMedium, SessionID: "sess-1"},
		Tools:        []llm.ToolSpec{{Name: "read", Description: "Read", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Messages: []llm.Message{
			llm.UserText("look"),
			*reply,
			{Role: llm.RoleToolResult, ToolCallID: "call_A|fc_1", ToolName: "read", Content: []llm.Content{llm.Text("A")}},
			{Role: llm.RoleToolResult, ToolCallID: "call_B|fc_2", ToolName: "ls", Content: []llm.Content{llm.Text("B")}},
		},
	}
	if r := collect(t, m, context.Background(), req); r.Err != nil {
		t.Fatal(r.Err)
	}
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"store":            `false`,
		"stream":           `true`,
		"reasoning":        `{"effort":"medium","summary":"auto"}`,
		"include":          `["reasoning.encrypted_content"]`,
		"prompt_cache_key": `"sess-1"`,
		"tools":            `[{"description":"Read","name":"read","parameters":{"type":"object"},"strict":false,"type":"function"}]`,
	}
	for k, want := range checks {
		if got := js(body[k]); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	want := []string{
		`{"content":"sys","role":"developer"}`,
		`{"content":[{"text":"look","type":"input_text"}],"role":"user"}`,
		`{"encrypted_content":"gAAAAABenc","id":"rs_1","summary":[{"text":"Need the file.","type":"summary_text"},{"text":"And a listing.","type":"summary_text"}],"type":"reasoning"}`,
		`{"arguments":"{\"path\": \"README.md\"}","call_id":"call_A","id":"fc_1","name":"read","type":"function_call"}`,
		`{"arguments":"{}","call_id":"call_B","id":"fc_2","name":"ls","type":"function_call"}`,
		`{"call_id":"call_A","output":"A","type":"function_call_output"}`,
		`{"call_id":"call_B","output":"B","type":"function_call_output"}`,
	}
	input := body["input"].([]any)
	if len(input) != len(want) {
		t.Fatalf("%d input items: %s", len(input), js(input))
	}
	for i := range want {
		if got := js(input[i]); got != want[i] {
			t.Errorf("input %d\n got %s\nwant %s", i, got, want[i])
		}
	}
}

func TestResponsesAgentToolLoop(t *testing.T) {
	ev := func(typ string, v map[string]any) string {
		v["type"] = typ
		b, _ := json.Marshal(v)
		return "event: " + typ + "\ndata: " + string(b) + "\n\n"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []map[string]any `json:"input"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		results := 0
		for _, it := range req.Input {
			if it["type"] == "function_call_output" {
				results++
				if it["output"] != fmt.Sprintf("count=%d", results) || it["call_id"] != fmt.Sprintf("call_%d", results) {
					http.Error(w, `{"error":{"message":"unexpected tool output"}}`, 400)
					return
				}
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ev("response.created", map[string]any{"response": map[string]any{"status": "in_progress"}}))
		if results < 3 {
			n := results + 1
			io.WriteString(w, ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n), "name": "count", "arguments": ""}}))
			io.WriteString(w, ev("response.function_call_arguments.delta", map[string]any{"output_index": 0, "delta": fmt.Sprintf(`{"n":%d}`, n)}))
			io.WriteString(w, ev("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n), "name": "count", "arguments": fmt.Sprintf(`{"n":%d}`, n)}}))
		} else {
			io.WriteString(w, ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "message", "id": "msg_f"}}))
			io.WriteString(w, ev("response.output_text.delta", map[string]any{"output_index": 0, "delta": "All counted."}))
			io.WriteString(w, ev("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{"type": "message", "id": "msg_f"}}))
		}
		io.WriteString(w, ev("response.completed", map[string]any{"response": map[string]any{"status": "completed", "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}}}))
	}))
	defer srv.Close()
	counter := &tool.Func{ToolName: "count", ToolDescription: "Counts.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Run: func(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			var a struct{ N int }
			json.Unmarshal(call.Args, &a)
			return tool.TextResult(fmt.Sprintf("count=%d", a.N)), nil
		}}
	reg, _ := tool.NewRegistry(counter)
	a := agent.New(agent.Config{Model: newResponses(srv), Tools: reg})
	var end agent.Event
	for ev, err := range a.Run(context.Background(), llm.UserText("count")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventAgentEnd {
			end = ev
		}
	}
	msgs := a.Messages()
	if end.Reason != agent.ReasonStop || msgs[len(msgs)-1].Text() != "All counted." || end.Usage.Input != 40 {
		t.Fatalf("end %q %v, last %q", end.Reason, end.Err, msgs[len(msgs)-1].Text())
	}
}

func TestResponsesHTTPErrors(t *testing.T) {
	tests := []struct {
		status int
		ctype  string
		body   string
		words  string
	}{
		{401, "application/json", `{"error":{"message":"Incorrect API key provided: sk-proj-****6789.","type":"invalid_request_error","code":"invalid_api_key"}}`, "Incorrect API key"},
		{400, "application/json", `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, "exceeds the context window"},
		{529, "application/json", `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`, "overloaded"},
		{500, "application/json", `{"error":{"message":"The server had an error processing your request.","type":"server_error"}}`, "server had an error"},
		{200, "text/html", `<html><title>502 Bad Gateway</title></html>`, "Bad Gateway"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			srv := serve(t, tt.status, map[string]string{"Content-Type": tt.ctype}, tt.body, nil)
			r := collect(t, newResponses(srv), context.Background(), simpleRequest())
			var pe *llm.ProviderError
			if !r.Bare || !errors.As(r.Err, &pe) || pe.Status != tt.status || !strings.Contains(pe.Error(), tt.words) {
				t.Fatalf("bare %v err %v", r.Bare, r.Err)
			}
			if tt.status != 200 && pe.Reason != llm.Classify(tt.status, tt.body) {
				t.Errorf("reason %q, the classifier says %q", pe.Reason, llm.Classify(tt.status, tt.body))
			}
			if pe.Reason == llm.ReasonUnknown {
				t.Errorf("reason unknown")
			}
		})
	}
}

// Function-call arguments split at every character boundary end the same.
func TestResponsesArgsEveryBoundary(t *testing.T) {
	args := `{"command": "grep -rn \"caf\u00e9\" .", "paths": ["a", "b/ü"], "n": -1.5e2}`
	ev := func(typ string, v map[string]any) string {
		v["type"] = typ
		b, _ := json.Marshal(v)
		return "event: " + typ + "\ndata: " + string(b) + "\n\n"
	}
	head := ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash", "arguments": ""}})
	tail := ev("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash"}}) +
		ev("response.completed", map[string]any{"response": map[string]any{"status": "completed"}})
	for i := 0; i <= len(args); i++ {
		if i < len(args) && (args[i]&0xC0) == 0x80 {
			continue
		}
		body := head + ev("response.function_call_arguments.delta", map[string]any{"output_index": 0, "delta": args[:i]}) +
			ev("response.function_call_arguments.delta", map[string]any{"output_index": 0, "delta": args[i:]}) + tail
		srv := serve(t, 200, nil, body, nil)
		r := collect(t, newResponses(srv), context.Background(), simpleRequest())
		if r.Err != nil || len(r.Msg.ToolCalls()) != 1 || string(r.Msg.ToolCalls()[0].Arguments) != args {
			t.Fatalf("split at %d: err %v calls %+v", i, r.Err, r.Msg.ToolCalls())
		}
	}
}
