package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/anthropic"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// replay answers every request with the same stream, in memory.
type replay = wiretest.Replay

func longTextStream(n int) string {
	var sb strings.Builder
	sb.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"usage\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n")
	sb.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" token%d\"}}\n\n", i%100)
	}
	sb.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	sb.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1000}}\n\n")
	sb.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return sb.String()
}

// BenchmarkStreamText decodes a 1,000-delta text reply: MB/s of SSE,
// events/s, and allocations per event (allocs/op / 1005).
func BenchmarkStreamText(b *testing.B) {
	const deltas = 1000
	body := longTextStream(deltas)
	m := anthropic.New(anthropic.Config{Info: llm.ModelInfo{ID: "claude-test"}, HTTPClient: &http.Client{Transport: replay(body)}})
	wiretest.BenchStream(b, m, simpleRequest(), body)
}

// BenchmarkStreamToolArgs streams one 64 KiB tool argument (a file being
// written) in 16-byte fragments: the cost of keeping partial arguments
// parsed.
func BenchmarkStreamToolArgs(b *testing.B) {
	content := strings.Repeat("package main // generated line\n", 64<<10/31)
	args, _ := json.Marshal(map[string]string{"path": "big.go", "content": content})
	var sb strings.Builder
	sb.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n")
	sb.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_b\",\"name\":\"write\",\"input\":{}}}\n\n")
	for i := 0; i < len(args); i += 16 {
		frag, _ := json.Marshal(string(args[i:min(i+16, len(args))]))
		fmt.Fprintf(&sb, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%s}}\n\n", frag)
	}
	sb.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	sb.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":20000}}\n\n")
	sb.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	body := sb.String()
	m := anthropic.New(anthropic.Config{Info: llm.ModelInfo{ID: "claude-test"}, HTTPClient: &http.Client{Transport: replay(body)}})
	wiretest.BenchToolArgs(b, m, simpleRequest(), body, len(args))
}
