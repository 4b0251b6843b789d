package google_test

import (
	"context"
	"net/http/httptest"
	"os"
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
type (
	result  = wiretest.Result
	capture = wiretest.Capture
)

func collect(t testing.TB, m llm.Model, ctx context.Context, req *llm.Request) result {
	t.Helper()
	return wiretest.Collect(t, m, ctx, req)
}

func serve(t testing.TB, status int, header map[string]string, body string, c *capture) *httptest.Server {
	t.Helper()
	return wiretest.Serve(t, status, header, body, c)
}

func typesString(ts []llm.EventType) string { return wiretest.Types(ts) }

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

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
