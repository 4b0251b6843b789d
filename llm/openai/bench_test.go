package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
	"github.com/agentloop/agentloop/llm/openai"
)

// replay answers every request with the same stream, in memory.
type replay = wiretest.Replay

func longTextStream(n int) string {
	var sb strings.Builder
	sb.WriteString(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1764370000,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, `data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1764370000,"model":"gpt-test","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" token%d"},"logprobs":null,"finish_reason":null}]}`+"\n\n", i%100)
	}
	sb.WriteString(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1764370000,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	sb.WriteString(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1764370000,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":1000,"total_tokens":1100}}` + "\n\n")
	sb.WriteString("data: [DONE]\n\n")
	return sb.String()
}

// BenchmarkStreamText decodes a 1,000-delta text reply: MB/s of SSE,
// events/s, and allocations per event (allocs/op / 1004).
func BenchmarkStreamText(b *testing.B) {
	const deltas = 1000
	body := longTextStream(deltas)
	m := openai.New(openai.Config{Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai"}, HTTPClient: &http.Client{Transport: replay(body)}})
	wiretest.BenchStream(b, m, simpleRequest(), body)
}

func longResponsesStream(n int) string {
	var sb strings.Builder
	sb.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_b\",\"status\":\"in_progress\",\"output\":[]}}\n\n")
	sb.WriteString("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_b\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_b\",\"output_index\":0,\"content_index\":0,\"delta\":\" token%d\"}\n\n", i+2, i%100)
	}
	sb.WriteString("event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"msg_b\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\"}}\n\n")
	sb.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_b\",\"status\":\"completed\",\"usage\":{\"input_tokens\":100,\"output_tokens\":1000}}}\n\n")
	return sb.String()
}

// BenchmarkResponsesStreamText is BenchmarkStreamText on the Responses
// wire.
func BenchmarkResponsesStreamText(b *testing.B) {
	const deltas = 1000
	body := longResponsesStream(deltas)
	m := openai.NewResponses(openai.Config{Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai"}, HTTPClient: &http.Client{Transport: replay(body)}})
	wiretest.BenchStream(b, m, simpleRequest(), body)
}

// BenchmarkStreamToolArgs streams one 64 KiB tool argument (a file being
// written) in 16-byte fragments on Chat Completions, where every fragment
// also feeds the watch for the object's end (the call's block ends on its
// closing brace, before finish_reason).
func BenchmarkStreamToolArgs(b *testing.B) {
	content := strings.Repeat("package main // generated line\n", 64<<10/31)
	args, _ := json.Marshal(map[string]string{"path": "big.go", "content": content})
	var sb strings.Builder
	sb.WriteString(argsDelta(0, "call_b", "write", ""))
	for i := 0; i < len(args); i += 16 {
		sb.WriteString(argsDelta(0, "", "", string(args[i:min(i+16, len(args))])))
	}
	sb.WriteString(chunkJSON(map[string]any{}, "tool_calls") + "data: [DONE]\n\n")
	body := sb.String()
	m := openai.New(openai.Config{Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai"}, HTTPClient: &http.Client{Transport: replay(body)}})
	wiretest.BenchToolArgs(b, m, simpleRequest(), body, len(args))
}
