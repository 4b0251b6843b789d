package openai_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
	"github.com/agentloop/agentloop/llm/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-proj-test-SECRET-0123456789"

// The shared helpers, under the names these tests use.
type capture = wiretest.Capture

var (
	collect     = wiretest.Collect
	serve       = wiretest.Serve
	typesString = wiretest.Types
	fixture     = wiretest.Fixture
)

func newModel(srv *httptest.Server, idle time.Duration) *openai.Model {
	return openai.New(openai.Config{
		Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai", API: llm.APIOpenAICompletions,
			ContextWindow: 400000, MaxTokens: 32000, Reasoning: true, Input: []string{"text", "image"},
			Cost: llm.Prices{Input: 1.25, Output: 10, CacheRead: 0.125}},
		APIKey:      testKey,
		BaseURL:     srv.URL + "/v1",
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
		return openai.New(openai.Config{Info: llm.ModelInfo{ID: "m"}, HTTPClient: c})
	}, openai.DefaultIdleTimeout,
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Thinking\"}}]}\n\n",
		": OPENROUTER PROCESSING\n\n")
}

// A finished stream hands its connection back.
func TestConnectionReuse(t *testing.T) {
	wiretest.ConnectionReuse(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, fixture(t, "text.sse"))
}
