package anthropic_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/anthropic"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-ant-test-SECRET-0123456789"

// The shared helpers, under the names these tests use.
type capture = wiretest.Capture

var (
	collect     = wiretest.Collect
	serve       = wiretest.Serve
	typesString = wiretest.Types
	fixture     = wiretest.Fixture
)

func newModel(srv *httptest.Server, idle time.Duration) *anthropic.Model {
	return anthropic.New(anthropic.Config{
		Info: llm.ModelInfo{ID: "claude-test", Provider: "anthropic", API: llm.APIAnthropicMessages,
			ContextWindow: 200000, MaxTokens: 32000, Reasoning: true,
			Cost: llm.Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}},
		APIKey:      testKey,
		BaseURL:     srv.URL,
		HTTPClient:  srv.Client(),
		IdleTimeout: idle,
	})
}

func simpleRequest() *llm.Request {
	return &llm.Request{SystemPrompt: "Be brief.", Messages: []llm.Message{llm.UserText("hi")}}
}

// The default idle timeout fires on a stream that only sends keep-alives.
func TestIdleTimeoutFakeClock(t *testing.T) {
	wiretest.IdleTimeout(t, func(c *http.Client) llm.Model {
		return anthropic.New(anthropic.Config{Info: llm.ModelInfo{ID: "m"}, HTTPClient: c})
	}, anthropic.DefaultIdleTimeout,
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n",
		": keep-alive\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n")
}

// A finished stream hands its connection back.
func TestConnectionReuse(t *testing.T) {
	wiretest.ConnectionReuse(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, fixture(t, "text.sse"))
}
