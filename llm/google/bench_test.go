package google_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// replay answers every request with the same stream, in memory.
type replay = wiretest.Replay

// longTextStream is n text chunks as Gemini sends them: each a whole
// GenerateContentResponse with the running usage.
func longTextStream(n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \" token%d\"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 100,\"candidatesTokenCount\": %d,\"totalTokenCount\": %d},\"modelVersion\": \"gemini-test\",\"responseId\": \"bench\"}\r\n\r\n", i%100, i+1, i+101)
	}
	sb.WriteString("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 100,\"candidatesTokenCount\": 1000,\"totalTokenCount\": 1100},\"modelVersion\": \"gemini-test\",\"responseId\": \"bench\"}\r\n\r\n")
	return sb.String()
}

// BenchmarkStreamText decodes a 1,000-chunk text reply: MB/s of SSE,
// events/s, and allocations per event (allocs/op / 1004).
func BenchmarkStreamText(b *testing.B) {
	const chunks = 1000
	body := longTextStream(chunks)
	m := google.New(google.Config{Info: llm.ModelInfo{ID: "gemini-test"}, HTTPClient: &http.Client{Transport: replay(body)}})
	wiretest.BenchStream(b, m, simpleRequest(), body)
}
