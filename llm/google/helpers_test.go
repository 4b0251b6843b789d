package google_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "AIzaSyTEST-SECRET-0123456789"

// The shared helpers, under the names these tests use.
type capture = wiretest.Capture

var (
	collect     = wiretest.Collect
	serve       = wiretest.Serve
	typesString = wiretest.Types
	fixture     = wiretest.Fixture
)

func newModel(srv *httptest.Server, idle time.Duration) *google.Model {
	return newModelID(srv, idle, "gemini-test")
}

func newModelID(srv *httptest.Server, idle time.Duration, id string) *google.Model {
	return google.New(google.Config{
		Info: llm.ModelInfo{ID: id, Provider: "google", API: llm.APIGoogleGenerativeAI,
			ContextWindow: 1048576, MaxTokens: 65536, Reasoning: true,
			Cost: llm.Prices{Input: 1.25, Output: 10, CacheRead: 0.125}},
		APIKey:      testKey,
		BaseURL:     srv.URL + "/v1beta",
		HTTPClient:  srv.Client(),
		IdleTimeout: idle,
	})
}

func simpleRequest() *llm.Request {
	return &llm.Request{SystemPrompt: "Be brief.", Messages: []llm.Message{llm.UserText("hi")}}
}
