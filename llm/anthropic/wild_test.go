package anthropic_test

import (
	"context"
	"net/http/httptest"
	"strings"
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

// An event of valid JSON in a shape the decoder cannot read (an index as a
// string, a delta of a newer type with an object where text was) is
// skipped; the stream finishes as without it.
func TestOddEventSkipped(t *testing.T) {
	odd := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\"0\",\"delta\":{\"type\":\"text_delta\",\"text\":{\"value\":\"?\"}}}\n\n"
	body := strings.Replace(fixture(t, "text.sse"), "event: ping", odd+"event: ping", 1)
	wiretest.Split(t, body, nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil || r.Msg.Text() != "Hello, world." {
			t.Fatalf("err %v text %q", r.Err, r.Msg.Text())
		}
	})
}
