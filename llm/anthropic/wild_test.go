package anthropic_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// A refusal's stop_details (category, explanation) reach the error the
// user sees; the text before it is kept.
func TestRefusalStopDetails(t *testing.T) {
	wiretest.Split(t, fixture(t, "refusal_details.sse"), nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		wiretest.CheckStreamFailure(t, r, wiretest.StreamFailure{
			Words: []string{"refusal", "declined", "category: cyber", "The request asks for working malware."},
			Text:  "I cannot help.",
		})
	})
}

// A second message_start inside one stream is a stream error, not a
// merged message: the first message's text is kept as the partial.
func TestSecondMessageStart(t *testing.T) {
	wiretest.Split(t, fixture(t, "two_message_starts.sse"), nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		wiretest.CheckStreamFailure(t, r, wiretest.StreamFailure{
			Words: []string{"second message_start"},
			Text:  "First.",
		})
	})
}
