package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// Issue 16.3 on Anthropic, which refuses a tool_use id used twice in a
// request: a two-turn history whose calls reuse functions.weather:0 is sent
// with unique ids, each tool_result answering its own turn's call.
func TestRepeatedCallIDs(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
	msgs := []llm.Message{llm.UserText("weather?")}
	for _, city := range []string{"Paris", "Rome"} {
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonToolUse,
				Content: []llm.Content{llm.ToolCall("functions.weather:0", "weather", json.RawMessage(`{"city":"`+city+`"}`))}},
			llm.Message{Role: llm.RoleToolResult, ToolCallID: "functions.weather:0", ToolName: "weather", Content: []llm.Content{llm.Text("sunny in " + city)}})
	}
	if r := collect(t, newModel(srv, 0), context.Background(), &llm.Request{Messages: msgs}); r.Err != nil {
		t.Fatal(r.Err)
	}
	var body sentMessages
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var got []string
	for i, m := range body.Messages {
		for _, b := range m.Content {
			if b.Type != "tool_use" {
				continue
			}
			if seen[b.ID] {
				t.Errorf("tool_use id %q sent twice", b.ID)
			}
			seen[b.ID] = true
			next := body.Messages[min(i+1, len(body.Messages)-1)]
			if i+1 >= len(body.Messages) || len(next.Content) == 0 || next.Content[0].ToolUseID != b.ID {
				t.Errorf("tool_use %q not answered in the next turn: %s", b.ID, c.Body)
				continue
			}
			got = append(got, next.Content[0].Content[0].Text)
		}
	}
	if len(got) != 2 || got[0] != "sunny in Paris" || got[1] != "sunny in Rome" {
		t.Errorf("results sent %q:\n%s", got, c.Body)
	}
}

// sentMessages is what the pairing tests read of a request's messages.
type sentMessages struct {
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	} `json:"messages"`
}
