package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

func TestStreamFixtures(t *testing.T) {
	tests := []wiretest.Case{
		{
			Name: "plain text", Fixture: "text.sse",
			Types: "start text_start text_delta text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.Text() != "Hello, world." || m.StopReason != llm.StopReasonStop {
					t.Errorf("text %q stop %q", m.Text(), m.StopReason)
				}
				u := m.Usage
				if u.Input != 21 || u.Output != 12 || u.CacheRead != 2000 || u.CacheWrite != 100 || u.Total != 2133 {
					t.Errorf("usage %+v", *u)
				}
				want := (21*3 + 12*15 + 2000*0.3 + 100*3.75) / 1e6
				if math.Abs(u.Cost.Total-want) > 1e-12 {
					t.Errorf("cost %v, want %v", u.Cost.Total, want)
				}
				if m.Provider != "anthropic" || m.Model != "claude-test" || m.API != "anthropic-messages" || m.Timestamp == 0 {
					t.Errorf("metadata %q %q %q %d", m.Provider, m.Model, m.API, m.Timestamp)
				}
			},
		},
		{
			Name: "CRLF and comments", Fixture: "text.sse",
			Transform: func(s string) string {
				return ": keep-alive\r\n\r\n" + strings.ReplaceAll(s, "\n", "\r\n")
			},
			Types: "start text_start text_delta text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.Text() != "Hello, world." {
					t.Errorf("text %q", m.Text())
				}
			},
		},
		{
			Name: "thinking", Fixture: "thinking.sse",
			Types: "start thinking_start thinking_delta thinking_delta thinking_end thinking_start thinking_end text_start text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				th := m.Content[0]
				if th.Thinking != "Let me think about 2+2." || th.ThinkingSignature != "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" {
					t.Errorf("thinking block %+v", th)
				}
				if r := m.Content[1]; !r.Redacted || r.ThinkingSignature != "EmwKAhgBEgy3va3pzix/LafPsn4a" {
					t.Errorf("redacted block %+v", r)
				}
				if m.Text() != "4" {
					t.Errorf("text %q", m.Text())
				}
			},
		},
		{
			Name: "two tool calls, one with empty input", Fixture: "tools.sse",
			Types: "start text_start text_delta text_end toolcall_start toolcall_delta toolcall_delta toolcall_end toolcall_start toolcall_end done",
			Check: func(t *testing.T, m *llm.Message) {
				calls := m.ToolCalls()
				if len(calls) != 2 || m.StopReason != llm.StopReasonToolUse {
					t.Fatalf("calls %+v stop %q", calls, m.StopReason)
				}
				if calls[0].ID != "toolu_01A" || calls[0].Name != "read" || string(calls[0].Arguments) != `{"path": "README.md", "limit": 20}` {
					t.Errorf("first call %+v (%s)", calls[0], calls[0].Arguments)
				}
				if calls[1].Name != "ls" || string(calls[1].Arguments) != `{}` {
					t.Errorf("second call %+v (%s)", calls[1], calls[1].Arguments)
				}
			},
		},
		{
			Name: "pause_turn", Fixture: "text.sse",
			Transform: func(s string) string { return strings.Replace(s, `"end_turn"`, `"pause_turn"`, 1) },
			Types:     "start text_start text_delta text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.StopReason != llm.StopReasonStop {
					t.Errorf("stop %q", m.StopReason)
				}
			},
		},
		{
			Name: "max_tokens", Fixture: "text.sse",
			Transform: func(s string) string { return strings.Replace(s, `"end_turn"`, `"max_tokens"`, 1) },
			Types:     "start text_start text_delta text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.StopReason != llm.StopReasonLength {
					t.Errorf("stop %q", m.StopReason)
				}
			},
		},
		{
			Name: "OpenRouter-style [DONE] after message_stop", Fixture: "text.sse",
			Transform: func(s string) string { return s + "event: data\ndata: [DONE]\n\n" },
			Types:     "start text_start text_delta text_delta text_end done",
		},
	}
	wiretest.RunCases(t, tests, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, simpleRequest(), nil)
}

// The arguments of a call arrive split at every possible byte boundary,
// and one byte per delta; the final arguments are always the same.
func TestToolArgsEveryBoundary(t *testing.T) {
	args := `{"command": "grep -rn \"caf\u00e9\" .", "paths": ["a", "b/ü"], "n": -1.5e2, "deep": {"x": [true, null]}}`
	head := `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"claude-test","usage":{"input_tokens":1,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_X","name":"bash","input":{}}}

`
	tail := `event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}

event: message_stop
data: {"type":"message_stop"}

`
	delta := func(s string) string {
		b, _ := json.Marshal(map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]string{"type": "input_json_delta", "partial_json": s}})
		return "event: content_block_delta\ndata: " + string(b) + "\n\n"
	}
	var want any
	if err := json.Unmarshal([]byte(args), &want); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, body string, deltas int) {
		srv := serve(t, 200, nil, body, nil)
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if len(r.Deltas) != deltas || strings.Join(r.Deltas, "") != args {
			t.Fatalf("%d deltas joined to %q", len(r.Deltas), strings.Join(r.Deltas, ""))
		}
		var got any
		if err := json.Unmarshal(r.Msg.ToolCalls()[0].Arguments, &got); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("final arguments %s (%v)", r.Msg.ToolCalls()[0].Arguments, err)
		}
	}
	// Fragments are JSON strings themselves, so a provider splits between
	// characters, never inside one.
	for i := 0; i <= len(args); i++ {
		if i < len(args) && !utf8.RuneStart(args[i]) {
			continue
		}
		body := head + delta(args[:i]) + delta(args[i:]) + tail
		n := 2
		if i == 0 || i == len(args) {
			n = 1 // empty fragments are not events
		}
		t.Run(fmt.Sprint("split at ", i), func(t *testing.T) { check(t, body, n) })
	}
	t.Run("one character per delta", func(t *testing.T) {
		var sb strings.Builder
		sb.WriteString(head)
		for _, c := range args {
			sb.WriteString(delta(string(c)))
		}
		sb.WriteString(tail)
		check(t, sb.String(), utf8.RuneCountInString(args))
	})
}

func TestInvalidFinalArguments(t *testing.T) {
	body := `event: message_start
data: {"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_Y","name":"write","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a.txt\", \"content\": "}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}

event: message_stop
data: {"type":"message_stop"}

`
	srv := serve(t, 200, nil, body, nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	a := r.Msg.ToolCalls()[0].Arguments
	var raw string
	if err := json.Unmarshal(a, &raw); err != nil || raw != `{"path": "a.txt", "content": ` {
		t.Fatalf("invalid arguments should be kept as a JSON string of the raw text, got %s", a)
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		reasons []llm.Reason // acceptable reasons
		words   string       // the provider's words the error must quote
		retry   time.Duration
	}{
		{"401", 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}`,
			[]llm.Reason{llm.ReasonAuth}, "invalid x-api-key", 0},
		{"402 billing", 402, nil, `{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low to access the Anthropic API."}}`,
			[]llm.Reason{llm.ReasonBilling}, "credit balance is too low", 0},
		{"400 billing text", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`,
			nil, "credit balance is too low", 0},
		{"429 with retry-after", 429, map[string]string{"Retry-After": "7", "Content-Type": "application/json"}, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			[]llm.Reason{llm.ReasonRateLimit}, "per-minute rate limit", 7 * time.Second},
		{"500", 500, nil, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			[]llm.Reason{llm.ReasonServer, llm.ReasonTimeout}, "Internal server error", 0},
		{"529", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			[]llm.Reason{llm.ReasonOverloaded}, "Overloaded", 0},
		{"context overflow", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210345 tokens > 200000 maximum"}}`,
			nil, "prompt is too long", 0},
		{"200 with HTML", 200, map[string]string{"Content-Type": "text/html"}, `<html><head><title>Welcome to nginx!</title></head><body>nginx</body></html>`,
			nil, "nginx", 0},
		{"200 with JSON", 200, map[string]string{"Content-Type": "application/json"}, `{"id":"msg_1","type":"message","content":[]}`,
			nil, "application/json", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, tt.status, tt.header, tt.body, nil)
			r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
			wiretest.CheckHTTPError(t, r, wiretest.HTTPError{Status: tt.status, Reasons: tt.reasons, Body: tt.body, Words: tt.words, Retry: tt.retry, Key: testKey})
		})
	}
}

func TestStreamFailures(t *testing.T) {
	text := fixture(t, "text.sse")
	cut := text[:strings.Index(text, "event: content_block_stop")]
	tests := []struct {
		name    string
		body    string
		reasons []llm.Reason
		words   string
		text    string // partial text kept
	}{
		{"error event mid-stream", fixture(t, "error_midstream.sse"), []llm.Reason{llm.ReasonOverloaded}, "Overloaded", "Partial answ"},
		{"cut without message_stop", cut, []llm.Reason{llm.ReasonNetwork}, "ended before", "Hello, world."},
		{"cut mid-line", cut + "event: content_block_delta\ndata: {\"type\":\"content_bl", []llm.Reason{llm.ReasonNetwork}, "ended before", "Hello, world."},
		{"invalid JSON chunk", strings.Replace(text, `"text":", world."}}`, `"text":", world."`, 1), nil, "not valid JSON", "Hello"},
		{"malformed SSE", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\nthis is not an event stream\n", []llm.Reason{llm.ReasonNetwork}, "ended before", ""},
		{"context window exceeded stop", strings.Replace(text, `"stop_reason":"end_turn"`, `"stop_reason":"model_context_window_exceeded"`, 1),
			[]llm.Reason{llm.ReasonContextOverflow}, "context window", "Hello, world."},
		// A refusal is the model's answer, not a provider failure the
		// classifier knows: it stays unknown (never retried as transient).
		{"refusal", strings.Replace(text, `"stop_reason":"end_turn"`, `"stop_reason":"refusal"`, 1), []llm.Reason{llm.ReasonUnknown}, "declined", "Hello, world."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, 200, nil, tt.body, nil)
			r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
			pe := wiretest.CheckStreamFailure(t, r, wiretest.StreamFailure{Reasons: tt.reasons, Words: []string{tt.words}, Text: tt.text})
			if pe.Reason == llm.ReasonUnknown && !slices.Contains(tt.reasons, llm.ReasonUnknown) {
				t.Errorf("reason unknown")
			}
		})
	}
}

func TestAbortKeepsPartial(t *testing.T) {
	wiretest.AbortKeepsPartial(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) },
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n"+
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half a thou\"}}\n\n",
		"Half a thou")
}

// A cancelled context before the call gives one bare error and no request.
func TestPreCancelled(t *testing.T) {
	wiretest.Cancelled(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, fixture(t, "text.sse"), nil)
}

func TestConsumerBreak(t *testing.T) {
	wiretest.ConsumerBreak(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) },
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\n")
}

// A tool_use block without an id gets one, so its result can be paired;
// the made-up ids differ between replies too, since results are matched
// to calls by id across the whole transcript.
func TestToolUseWithoutID(t *testing.T) {
	body := strings.Replace(fixture(t, "tools.sse"), `"id":"toolu_01B",`, ``, 1)
	srv := serve(t, 200, nil, body, nil)
	seen := map[string]bool{}
	for range 2 {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		calls := r.Msg.ToolCalls()
		if len(calls) != 2 || calls[1].ID == "" || calls[1].ID == calls[0].ID || seen[calls[1].ID] {
			t.Fatalf("calls %+v (ids seen before: %v)", calls, seen)
		}
		seen[calls[1].ID] = true
	}
}

// A cancellation cause is kept beside context.Canceled.
func TestCancelCause(t *testing.T) {
	wiretest.Cancelled(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, fixture(t, "text.sse"), errors.New("user pressed ctrl-c"))
}
