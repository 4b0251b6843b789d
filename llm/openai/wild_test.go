package openai_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// Output items and events the decoder does not model (a server-side tool
// search whose arguments are an object, a shell output whose delta is an
// object, an event type from the future) are skipped, and text that
// arrives before its output item is kept: fed whole and in pieces.
func TestResponsesUnknownItems(t *testing.T) {
	wiretest.Split(t, fixture(t, "responses_unknown_items.sse"), nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newResponses(srv), context.Background(), simpleRequest())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if got, want := typesString(r.Types), "start text_start text_delta text_delta text_end done"; got != want {
			t.Errorf("events\n got %s\nwant %s", got, want)
		}
		m := r.Msg
		if m.Text() != "Early text — kept." || len(m.Content) != 1 || m.Content[0].TextSignature != "msg_7" || m.StopReason != llm.StopReasonStop {
			t.Errorf("message %+v", m)
		}
		if m.Usage.Input != 40 || m.Usage.Output != 9 {
			t.Errorf("usage %+v", *m.Usage)
		}
	})
}

// Mistral's reasoning models send delta.content as an array of parts:
// thinking (with text parts of its own) and text both arrive, in order.
func TestChatContentParts(t *testing.T) {
	wiretest.Split(t, fixture(t, "chat_content_parts.sse"), nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if got, want := typesString(r.Types), "start thinking_start thinking_delta thinking_delta thinking_delta thinking_end text_start text_delta text_delta text_delta text_end done"; got != want {
			t.Errorf("events\n got %s\nwant %s", got, want)
		}
		m := r.Msg
		if len(m.Content) != 2 || m.Content[0].Thinking != "Half of 8 is 4. Done." || m.Text() != "It is 4. Ünïcode ✓" || m.StopReason != llm.StopReasonStop {
			t.Errorf("message %+v", m)
		}
		if m.Usage.Output != 28 {
			t.Errorf("usage %+v", *m.Usage)
		}
	})
}

// delta.refusal is the model's answer: its text reaches the message, and
// the reply ends as refused, not as a normal stop.
func TestChatRefusal(t *testing.T) {
	wiretest.Split(t, fixture(t, "chat_refusal.sse"), nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		wiretest.CheckStreamFailure(t, r, wiretest.StreamFailure{
			Words: []string{"refusal", "declined", "I'm sorry, I can't help with that."},
			Text:  "I'm sorry, I can't help with that.",
		})
	})
}
