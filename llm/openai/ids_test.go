package openai_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// repeatedIDs is a two-turn history whose calls both use the id Kimi K2 on
// Groq sends in every turn.
func repeatedIDs(api llm.API) []llm.Message {
	turn := func(city string) []llm.Message {
		return []llm.Message{
			{Role: llm.RoleAssistant, Provider: "openai", Model: "gpt-test", API: string(api), StopReason: llm.StopReasonToolUse,
				Content: []llm.Content{llm.ToolCall("functions.weather:0", "weather", json.RawMessage(`{"city":"`+city+`"}`))}},
			{Role: llm.RoleToolResult, ToolCallID: "functions.weather:0", ToolName: "weather", Content: []llm.Content{llm.Text("sunny in " + city)}},
		}
	}
	msgs := []llm.Message{llm.UserText("weather?")}
	msgs = append(msgs, turn("Paris")...)
	msgs = append(msgs, turn("Rome")...)
	return msgs
}

// Issue 16.3 on Chat Completions: both pairs are sent, each result right
// after its call with the id sent for it, and no id twice.
func TestRepeatedCallIDsChat(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
	if r := collect(t, newModel(srv, 0), context.Background(), &llm.Request{Messages: repeatedIDs(llm.APIOpenAICompletions)}); r.Err != nil {
		t.Fatal(r.Err)
	}
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	var pairs []string
	seen := map[string]bool{}
	for i, m := range body.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, tc := range m.ToolCalls {
			if seen[tc.ID] {
				t.Errorf("id %q sent twice", tc.ID)
			}
			seen[tc.ID] = true
			if i+1 >= len(body.Messages) || body.Messages[i+1].ToolCallID != tc.ID {
				t.Errorf("call %q is not followed by its result: %s", tc.ID, c.Body)
				continue
			}
			pairs = append(pairs, body.Messages[i+1].Content.(string))
		}
	}
	if len(pairs) != 2 || pairs[0] != "sunny in Paris" || pairs[1] != "sunny in Rome" {
		t.Errorf("pairs sent %q, want both turns:\n%s", pairs, c.Body)
	}
}

// Issue 16.3 on the Responses API, where a call_id used twice is refused.
func TestRepeatedCallIDsResponses(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "responses_text.sse"), &c)
	if r := collect(t, newResponses(srv), context.Background(), &llm.Request{Messages: repeatedIDs(llm.APIOpenAIResponses)}); r.Err != nil {
		t.Fatal(r.Err)
	}
	var body struct {
		Input []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	seen := map[string]bool{}
	for i, it := range body.Input {
		if it.Type != "function_call" {
			continue
		}
		if seen[it.CallID] {
			t.Errorf("call_id %q sent twice", it.CallID)
		}
		seen[it.CallID] = true
		if i+1 >= len(body.Input) || body.Input[i+1].Type != "function_call_output" || body.Input[i+1].CallID != it.CallID {
			t.Errorf("call %q is not followed by its output: %s", it.CallID, c.Body)
			continue
		}
		got = append(got, body.Input[i+1].Output)
	}
	if len(got) != 2 || got[0] != "sunny in Paris" || got[1] != "sunny in Rome" {
		t.Errorf("outputs sent %q:\n%s", got, c.Body)
	}
}
