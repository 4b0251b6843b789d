package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/openai"
)

// toolTurn is one round of a read-tool loop: the assistant's call and its
// result, about what mockllm -tool read makes.
func toolTurn(i int) []llm.Message {
	id := fmt.Sprintf("call_%d", i)
	return []llm.Message{
		{Role: llm.RoleAssistant, Provider: "openai", API: string(llm.APIOpenAICompletions), Model: "gpt-test", StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{llm.ToolCall(id, "read", json.RawMessage(`{"path":"hello.txt"}`))}},
		{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "read", Content: []llm.Content{llm.Text(fmt.Sprintf("hello %d\nworld, a line of a file that was read", i))}},
	}
}

// BenchmarkTurnRequest is the model-call side of one turn on top of a
// history of n messages, through the Chat Completions wire: two messages
// appended, the request converted, encoded and sent, a short reply
// decoded (from memory, no network). The history cache makes the cost
// follow what is new, not n. Every 32 turns the history is set back to n
// messages outside the timer.
func BenchmarkTurnRequest(b *testing.B) {
	reply := chunkJSON(map[string]any{"role": "assistant", "content": "ok"}, nil) + chunkJSON(map[string]any{}, "stop") + "data: [DONE]\n\n"
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			m := openai.New(openai.Config{Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai", API: llm.APIOpenAICompletions, MaxTokens: 1000},
				HTTPClient: &http.Client{Transport: replay(reply)}})
			base := []llm.Message{llm.UserText("read hello.txt again and again")}
			for i := 0; len(base) < n; i++ {
				base = append(base, toolTurn(i)...)
			}
			base = base[:n]
			var hist []llm.Message
			run := func() {
				for _, err := range m.Stream(context.Background(), &llm.Request{SystemPrompt: "Be brief.", Messages: hist}) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if i%32 == 0 {
					b.StopTimer()
					hist = append(make([]llm.Message, 0, n+80), base...)
					run() // the first request of a history encodes all of it
					b.StartTimer()
				}
				hist = append(hist, toolTurn(n+i)...)
				run()
			}
		})
	}
}
