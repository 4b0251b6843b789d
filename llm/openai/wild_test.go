package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
	"github.com/agentloop/agentloop/llm/openai"
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

// The items the decoder does not model go back to the model that made
// them, in place (before the message they preceded); another model does
// not get them.
func TestResponsesUnknownItemsReplayed(t *testing.T) {
	srv := serve(t, 200, nil, fixture(t, "responses_unknown_items.sse"), nil)
	reply := collect(t, newResponses(srv), context.Background(), simpleRequest()).Msg
	var c capture
	next := serve(t, 200, nil, fixture(t, "responses_text.sse"), &c)
	req := &llm.Request{Messages: []llm.Message{llm.UserText("look"), *reply, llm.UserText("and now?")}}
	if r := collect(t, newResponses(next), context.Background(), req); r.Err != nil {
		t.Fatal(r.Err)
	}
	var body struct {
		Input []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"input"`
	}
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range body.Input {
		got = append(got, it.Type+":"+it.ID)
	}
	// User turns are role items without a type.
	if want := ": tool_search_call:tsc_1 shell_call_output:sh_1 message:msg_7 :"; strings.Join(got, " ") != want {
		t.Errorf("input items\n got %s\nwant %s", strings.Join(got, " "), want)
	}

	// Through the transcript's JSON and back, the items stay.
	data, err := json.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	var back llm.Message
	if err := json.Unmarshal(data, &back); err != nil || len(back.Extra[openai.ItemsKey]) == 0 {
		t.Fatalf("items lost in the round trip: %v %s", err, data)
	}

	other := *reply
	other.Model = "another-model"
	req.Messages[1] = other
	if r := collect(t, newResponses(next), context.Background(), req); r.Err != nil {
		t.Fatal(r.Err)
	}
	if strings.Contains(string(c.Body), "tool_search_call") {
		t.Errorf("another model got the items: %s", c.Body)
	}
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

// A server that streams text without end: the reply is cut at its output
// limit (the request's max tokens, OutputBytesPerToken bytes each, at
// least MinOutputBytes) and ends as length, and the connection is closed
// rather than drained.
func TestEndlessReplyIsCapped(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(gone)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte(`data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 1000) + `"}}]}` + "\n\n")
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	req := simpleRequest()
	req.Options.MaxTokens = 1000 // 8000 bytes, raised to the 256 KiB floor
	r := collect(t, newModel(srv, 0), context.Background(), req)
	if r.Err != nil || r.Msg.StopReason != llm.StopReasonLength {
		t.Fatalf("err %v stop %q", r.Err, r.Msg.StopReason)
	}
	if n := len(r.Msg.Text()); n <= wire.MinOutputBytes-1000 || n > wire.MinOutputBytes {
		t.Errorf("text of %d bytes, want the cap %d", n, wire.MinOutputBytes)
	}
	<-gone // the server saw the client go
}

// One event over the SSE reader's limit fails the stream as a format
// failure that matches llm.ErrResponseTooLarge: not transient, so not
// retried, and it says what happened.
func TestOversizedEvent(t *testing.T) {
	body := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("y", 9<<20) + `"}}]}` + "\n\n"
	srv := serve(t, 200, nil, body, nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	pe := wiretest.CheckStreamFailure(t, r, wiretest.StreamFailure{Reasons: []llm.Reason{llm.ReasonFormat}, Words: []string{"larger than agentloop accepts"}})
	if !errors.Is(pe, llm.ErrResponseTooLarge) || pe.Reason.Transient() {
		t.Errorf("error %v (transient %v)", pe, pe.Reason.Transient())
	}
	if got := llm.ErrorText(pe); !strings.Contains(got, "a retry would get the same") {
		t.Errorf("ErrorText = %q", got)
	}
}

// A chunk of valid JSON in a shape the decoder cannot read (choices as an
// object, from a proxy) is skipped; the stream finishes as without it.
func TestChatOddChunkSkipped(t *testing.T) {
	odd := `data: {"id":"x","object":"chat.completion.chunk","choices":{"0":{"delta":{"content":"?"}}}}` + "\n\n"
	body := strings.Replace(fixture(t, "text.sse"), "data: ", odd+"data: ", 2)
	wiretest.Split(t, body, nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil || r.Msg.Text() != "Hello, world." {
			t.Fatalf("err %v text %q", r.Err, r.Msg.Text())
		}
	})
	// An odd chunk that reports an error still fails the stream with it.
	srv := serve(t, 200, nil, strings.Replace(fixture(t, "text.sse"), "data: ", `data: {"error":{"message":"upstream overloaded","code":529},"choices":{}}`+"\n\ndata: ", 2), nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	wiretest.CheckStreamFailure(t, r, wiretest.StreamFailure{Reasons: []llm.Reason{llm.ReasonOverloaded}, Words: []string{"upstream overloaded"}, Text: ""})
}
