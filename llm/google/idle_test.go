package google_test

import (
	"net/http"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// The default idle timeout (120 s) fires on a stream that only sends SSE
// comments after its first chunk, however many: they do not reset it.
func TestIdleTimeoutFakeClock(t *testing.T) {
	wiretest.IdleTimeout(t, func(c *http.Client) llm.Model {
		return google.New(google.Config{Info: llm.ModelInfo{ID: "m"}, HTTPClient: c})
	}, google.DefaultIdleTimeout, firstEvent, keepAlive)
}

const (
	firstEvent = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hi\"}],\"role\": \"model\"}}]}\n\n"
	keepAlive  = ": keep-alive\n\n"
)
