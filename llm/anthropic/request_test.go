package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/anthropic"
)

func TestRequestBody(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
	m := newModel(srv, 0)
	temp := 0.5
	req := &llm.Request{
		SystemPrompt: "You are terse.",
		Tools: []llm.ToolSpec{
			{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			{Name: "ls", Description: "List"},
		},
		Options: llm.Options{Thinking: llm.ThinkingLow, Temperature: &temp},
		Messages: []llm.Message{
			llm.UserText("look"),
			{Role: llm.RoleAssistant, Provider: "anthropic", Model: "claude-test", API: "anthropic-messages", StopReason: llm.StopReasonToolUse,
				Content: []llm.Content{
					llm.Thinking("hmm", "sig-1"),
					{Type: llm.ContentThinking, Redacted: true, ThinkingSignature: "opaque"},
					llm.Text(""),
					llm.ToolCall("call|with|pipes", "read", json.RawMessage(`{"path":"a"}`)),
					llm.ToolCall("toolu_2", "ls", json.RawMessage(`"not an object"`)),
				}},
			{Role: llm.RoleToolResult, ToolCallID: "call|with|pipes", ToolName: "read", Content: []llm.Content{llm.Text("A")}},
			{Role: llm.RoleToolResult, ToolCallID: "toolu_2", ToolName: "ls", IsError: true, Content: []llm.Content{llm.Text("boom")}},
			{Role: llm.RoleAssistant, Provider: "openai", Model: "gpt-x", API: "openai-completions", StopReason: llm.StopReasonStop,
				Content: []llm.Content{llm.Thinking("other model's thoughts", "reasoning_content"), llm.Text("done")}},
			{Role: llm.RoleAssistant, StopReason: llm.StopReasonAborted, Content: []llm.Content{llm.Text("cut off")}},
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("and this"), llm.Image("aGVsbG8=", "image/png")}},
		},
	}
	r := collect(t, m, context.Background(), req)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if c.Path != "/v1/messages" {
		t.Errorf("path %q", c.Path)
	}
	for k, want := range map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json",
		"Anthropic-Beta": anthropic.InterleavedThinkingBeta} {
		if got := c.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	checks := []struct{ name, got, want string }{
		{"model", js(body["model"]), `"claude-test"`},
		{"stream", js(body["stream"]), `true`},
		{"system", js(body["system"]), `[{"cache_control":{"type":"ephemeral"},"text":"You are terse.","type":"text"}]`},
		{"thinking", js(body["thinking"]), `{"budget_tokens":2048,"type":"enabled"}`},
		{"max_tokens (model cap)", js(body["max_tokens"]), `32000`},
		{"no temperature with thinking", js(body["temperature"]), `null`},
		{"no tool_choice", js(body["tool_choice"]), `null`},
		{"last tool cached", js(body["tools"].([]any)[1]), `{"cache_control":{"type":"ephemeral"},"description":"List","input_schema":{"properties":{},"type":"object"},"name":"ls"}`},
		{"first tool not cached", js(body["tools"].([]any)[0].(map[string]any)["cache_control"]), `null`},
	}
	msgs := body["messages"].([]any)
	want := []string{
		`{"content":[{"text":"look","type":"text"}],"role":"user"}`,
		`{"content":[{"signature":"sig-1","thinking":"hmm","type":"thinking"},{"data":"opaque","type":"redacted_thinking"},{"id":"call_with_pipes","input":{"path":"a"},"name":"read","type":"tool_use"},{"id":"toolu_2","input":{},"name":"ls","type":"tool_use"}],"role":"assistant"}`,
		`{"content":[{"content":[{"text":"A","type":"text"}],"tool_use_id":"call_with_pipes","type":"tool_result"},{"content":[{"text":"boom","type":"text"}],"is_error":true,"tool_use_id":"toolu_2","type":"tool_result"}],"role":"user"}`,
		`{"content":[{"text":"other model's thoughts","type":"text"},{"text":"done","type":"text"}],"role":"assistant"}`,
		`{"content":[{"text":"and this","type":"text"},{"cache_control":{"type":"ephemeral"},"source":{"data":"aGVsbG8=","media_type":"image/png","type":"base64"},"type":"image"}],"role":"user"}`,
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages: %s", len(msgs), js(msgs))
	}
	for i := range want {
		checks = append(checks, struct{ name, got, want string }{fmt.Sprint("message ", i), js(msgs[i]), want[i]})
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s\n got %s\nwant %s", ch.name, ch.got, ch.want)
		}
	}
}

func TestThinkingBudgetFitsModel(t *testing.T) {
	tests := []struct {
		level           llm.ThinkingLevel
		reqMax, infoMax int
		wantMax, budget int
	}{
		{llm.ThinkingHigh, 4000, 64000, 20384, 16384},
		{llm.ThinkingHigh, 4000, 8000, 8000, 6976},
		{llm.ThinkingOff, 4000, 8000, 4000, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.level, tt.reqMax, tt.infoMax), func(t *testing.T) {
			var c capture
			srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
			m := anthropic.New(anthropic.Config{Info: llm.ModelInfo{ID: "c", MaxTokens: tt.infoMax, Reasoning: true}, BaseURL: srv.URL, HTTPClient: srv.Client()})
			req := simpleRequest()
			req.Options = llm.Options{Thinking: tt.level, MaxTokens: tt.reqMax}
			if r := collect(t, m, context.Background(), req); r.Err != nil {
				t.Fatal(r.Err)
			}
			var body struct {
				MaxTokens int `json:"max_tokens"`
				Thinking  *struct {
					Budget int `json:"budget_tokens"`
				} `json:"thinking"`
			}
			json.Unmarshal(c.Body, &body)
			budget := 0
			if body.Thinking != nil {
				budget = body.Thinking.Budget
			}
			if body.MaxTokens != tt.wantMax || budget != tt.budget {
				t.Errorf("max_tokens %d budget %d, want %d %d", body.MaxTokens, budget, tt.wantMax, tt.budget)
			}
		})
	}
}

// Tool choice maps to Anthropic's, and a forced tool turns thinking off
// (the API refuses the two together); temperature then comes back.
func TestToolChoiceAndThinking(t *testing.T) {
	tests := []struct {
		choice         string
		want           string // tool_choice sent
		thinking, temp bool
	}{
		{"", `null`, true, false},
		{"auto", `null`, true, false},
		{"none", `{"type":"none"}`, true, false},
		{"required", `{"type":"any"}`, false, true},
		{"any", `{"type":"any"}`, false, true},
		{"read", `{"type":"tool","name":"read"}`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.choice, func(t *testing.T) {
			var c capture
			srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
			temp := 0.3
			req := simpleRequest()
			req.Tools = []llm.ToolSpec{{Name: "read"}}
			req.Options = llm.Options{Thinking: llm.ThinkingMedium, Temperature: &temp, ToolChoice: tt.choice}
			if r := collect(t, newModel(srv, 0), context.Background(), req); r.Err != nil {
				t.Fatal(r.Err)
			}
			var body struct {
				ToolChoice  json.RawMessage `json:"tool_choice"`
				Thinking    json.RawMessage `json:"thinking"`
				Temperature *float64        `json:"temperature"`
			}
			json.Unmarshal(c.Body, &body)
			if got := string(body.ToolChoice); got != tt.want && !(got == "" && tt.want == "null") {
				t.Errorf("tool_choice %s, want %s", got, tt.want)
			}
			if (len(body.Thinking) > 0) != tt.thinking || (body.Temperature != nil) != tt.temp {
				t.Errorf("thinking %s, temperature %v", body.Thinking, body.Temperature)
			}
			if beta := c.Header.Get("Anthropic-Beta"); (beta != "") != tt.thinking {
				t.Errorf("beta header %q with thinking %v", beta, tt.thinking)
			}
		})
	}
}

func ExampleNew() {
	m := anthropic.New(anthropic.Config{
		Info:   llm.ModelInfo{ID: "claude-sonnet-4-5", Provider: "anthropic", MaxTokens: 64000},
		APIKey: "sk-ant-...",
	})
	_ = m // m.Stream(ctx, &llm.Request{...}) streams a reply
	fmt.Println(m.Info().ID)
	// Output: claude-sonnet-4-5
}
