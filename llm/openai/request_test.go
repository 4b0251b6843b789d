package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
	"github.com/agentloop/agentloop/llm/openai"
)

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func history() []llm.Message {
	return []llm.Message{
		llm.UserText("look"),
		{Role: llm.RoleAssistant, Provider: "openai", Model: "gpt-test", API: "openai-completions", StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{
				llm.Thinking("I should read it.", "reasoning_content"),
				llm.Text("Reading."),
				llm.ToolCall("call_1", "read", json.RawMessage(`{"path":"a"}`)),
				llm.ToolCall("toolu_01|item_9", "write", jsonpartial.Invalid([]byte(`{"path": "b`))),
			}},
		{Role: llm.RoleToolResult, ToolCallID: "call_1", ToolName: "read", Content: []llm.Content{llm.Text("A"), llm.Image("aGk=", "image/png")}},
		{Role: llm.RoleToolResult, ToolCallID: "toolu_01|item_9", ToolName: "write", IsError: true, Content: []llm.Content{llm.Text("bad args")}},
		{Role: llm.RoleAssistant, Provider: "anthropic", Model: "claude", API: "anthropic-messages", StopReason: llm.StopReasonStop,
			Content: []llm.Content{llm.Thinking("claude thoughts", "sig"), llm.Text("ok")}},
		{Role: llm.RoleAssistant, StopReason: llm.StopReasonError, Content: []llm.Content{llm.Text("failed")}},
		llm.UserText("next"),
	}
}

func TestRequestBody(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
	temp := 0.2
	req := &llm.Request{
		SystemPrompt: "You are terse.",
		Tools:        []llm.ToolSpec{{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Options:      llm.Options{Thinking: llm.ThinkingXHigh, Temperature: &temp, ToolChoice: "read", MaxTokens: 1000, SessionID: "sess-9"},
		Messages:     history(),
	}
	if r := collect(t, newModel(srv, 0), context.Background(), req); r.Err != nil {
		t.Fatal(r.Err)
	}
	if c.Path != "/v1/chat/completions" {
		t.Errorf("path %q", c.Path)
	}
	if got := c.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("authorization %q", got)
	}
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"stream_options", js(body["stream_options"]), `{"include_usage":true}`},
		{"prompt_cache_key", js(body["prompt_cache_key"]), `"sess-9"`},
		{"store", js(body["store"]), `false`},
		{"max_completion_tokens", js(body["max_completion_tokens"]), `1000`},
		{"no max_tokens", js(body["max_tokens"]), `null`},
		{"reasoning_effort (xhigh clamped)", js(body["reasoning_effort"]), `"high"`},
		{"temperature", js(body["temperature"]), `0.2`},
		{"tools", js(body["tools"]), `[{"function":{"description":"Read a file","name":"read","parameters":{"type":"object"},"strict":false},"type":"function"}]`},
		{"tool_choice", js(body["tool_choice"]), `{"function":{"name":"read"},"type":"function"}`},
	}
	msgs := body["messages"].([]any)
	want := []string{
		`{"content":"You are terse.","role":"developer"}`,
		`{"content":"look","role":"user"}`,
		`{"content":"Reading.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a\"}","name":"read"},"id":"call_1","type":"function"},{"function":{"arguments":"{\"path\": \"b","name":"write"},"id":"toolu_01_item_9","type":"function"}]}`,
		`{"content":"A","role":"tool","tool_call_id":"call_1"}`,
		`{"content":"bad args","role":"tool","tool_call_id":"toolu_01_item_9"}`,
		`{"content":[{"text":"Images from the tool results above:","type":"text"},{"image_url":{"url":"data:image/png;base64,aGk="},"type":"image_url"}],"role":"user"}`,
		`{"content":"claude thoughts\n\nok","role":"assistant"}`,
		`{"content":"next","role":"user"}`,
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

// Compatible servers get what their compat record says.
func TestRequestByCompat(t *testing.T) {
	tests := []struct {
		provider string
		info     llm.ModelInfo
		check    map[string]string // top-level field → JSON
		system   string            // role of the system message
		reason   string            // the replayed assistant message's reasoning
	}{
		{"deepseek", llm.ModelInfo{ID: "deepseek-reasoner", Reasoning: true, MaxTokens: 8000},
			map[string]string{"max_tokens": "8000", "max_completion_tokens": "null", "store": "null", "prompt_cache_key": "null", "stream_options": `{"include_usage":true}`, "tools": `[{"function":{"description":"Read a file","name":"read","parameters":{"type":"object"}},"type":"function"}]`},
			"system", `"I should read it."`},
		{"openrouter", llm.ModelInfo{ID: "x/y", Reasoning: true},
			map[string]string{"reasoning": `{"effort":"low"}`, "reasoning_effort": "null"}, "system", "null"},
		{"ollama", llm.ModelInfo{ID: "qwen3", Reasoning: true},
			map[string]string{"reasoning_effort": `"low"`, "max_tokens": "null"}, "system", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			var c capture
			srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
			tt.info.Provider = tt.provider
			m := openai.New(openai.Config{Info: tt.info, BaseURL: srv.URL, HTTPClient: srv.Client()})
			msgs := history()
			msgs[1].Provider = tt.provider // the reasoning came from this server
			req := &llm.Request{SystemPrompt: "sys", Messages: msgs, Options: llm.Options{Thinking: llm.ThinkingLow},
				Tools: []llm.ToolSpec{{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object"}`)}}}
			if r := collect(t, m, context.Background(), req); r.Err != nil {
				t.Fatal(r.Err)
			}
			var body map[string]any
			json.Unmarshal(c.Body, &body)
			for k, want := range tt.check {
				if got := js(body[k]); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
			msgsOut := body["messages"].([]any)
			if got := msgsOut[0].(map[string]any)["role"]; got != tt.system {
				t.Errorf("system role %v", got)
			}
			if got := js(msgsOut[2].(map[string]any)["reasoning_content"]); got != tt.reason {
				t.Errorf("reasoning_content %s, want %s", got, tt.reason)
			}
		})
	}
}

func TestCompatFor(t *testing.T) {
	tests := []struct {
		provider, baseURL string
		field             string
		developer, store  bool
		format            string
	}{
		{"openai", "", "max_completion_tokens", true, true, "openai"},
		{"", "", "max_completion_tokens", true, true, "openai"},
		{"ollama", "", "max_tokens", false, false, "openai"},
		{"local", "http://127.0.0.1:11434/v1", "max_tokens", false, false, "openai"},
		{"router", "https://openrouter.ai/api/v1", "max_tokens", false, false, "openrouter"},
		{"groq", "", "max_completion_tokens", false, false, "openai"},
		{"vllm", "", "max_tokens", false, false, "openai"},
		{"llama.cpp", "", "max_tokens", false, false, "openai"},
		{"lmstudio", "", "max_tokens", false, false, "openai"},
		{"something", "http://10.0.0.5:8000/v1", "max_tokens", false, false, "openai"},
	}
	for _, tt := range tests {
		c := openai.CompatFor(tt.provider, tt.baseURL)
		if c.MaxTokensField != tt.field || c.SupportsDeveloperRole != tt.developer || c.SupportsStore != tt.store || c.ThinkingFormat != tt.format {
			t.Errorf("CompatFor(%q, %q) = %+v", tt.provider, tt.baseURL, c)
		}
	}
	if c := openai.CompatFor("deepseek", ""); !c.SendReasoningContentBack || c.ReasoningField != "reasoning_content" {
		t.Errorf("deepseek must send reasoning_content back: %+v", c)
	}
}

// A user's partial compat JSON overrides the defaults field by field.
func TestCompatJSONOverride(t *testing.T) {
	c := openai.CompatFor("vllm", "")
	if err := json.Unmarshal([]byte(`{"maxTokensField":"max_completion_tokens","supportsDeveloperRole":true}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.MaxTokensField != "max_completion_tokens" || !c.SupportsDeveloperRole || !c.SupportsUsageInStreaming {
		t.Fatalf("%+v", c)
	}
}

func ExampleNew() {
	m := openai.New(openai.Config{
		Info:    llm.ModelInfo{ID: "qwen3:8b", Provider: "ollama", ContextWindow: 32768},
		BaseURL: "http://127.0.0.1:11434/v1",
	})
	fmt.Println(m.Compat().MaxTokensField)
	// Output: max_tokens
}

// The rarer compat switches: tool names on results, a bridge turn after
// tool results, thinking replayed as text, and images left out for a
// text-only model.
func TestRequestCompatSwitches(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
	compat := openai.CompatFor("vllm", "")
	compat.RequiresToolResultName = true
	compat.RequiresAssistantAfterToolResult = true
	compat.RequiresThinkingAsText = true
	m := openai.New(openai.Config{Info: llm.ModelInfo{ID: "m", Provider: "local", Input: []string{"text"}},
		BaseURL: srv.URL, HTTPClient: srv.Client(), Compat: &compat})
	req := &llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("see"), llm.Image("aGk=", "image/png")}},
		{Role: llm.RoleAssistant, Provider: "local", API: "openai-completions", StopReason: llm.StopReasonToolUse, Content: []llm.Content{
			llm.Thinking("hmm", "reasoning_content"), llm.ToolCall("c1", "ls", nil)}},
		{Role: llm.RoleToolResult, ToolCallID: "c1", ToolName: "ls", Content: []llm.Content{llm.Text("x")}},
		llm.UserText("thanks"),
	}}
	if r := collect(t, m, context.Background(), req); r.Err != nil {
		t.Fatal(r.Err)
	}
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	json.Unmarshal(c.Body, &body)
	want := []string{
		`{"role":"user","content":[{"type":"text","text":"see"},{"type":"text","text":"(an image was omitted: this model does not accept images)"}]}`,
		`{"role":"assistant","content":"hmm","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
		`{"role":"tool","content":"x","tool_call_id":"c1","name":"ls"}`,
		`{"role":"assistant","content":"Tool results received."}`,
		`{"role":"user","content":"thanks"}`,
	}
	if len(body.Messages) != len(want) {
		t.Fatalf("%d messages", len(body.Messages))
	}
	for i := range want {
		if string(body.Messages[i]) != want[i] {
			t.Errorf("message %d\n got %s\nwant %s", i, body.Messages[i], want[i])
		}
	}
}
