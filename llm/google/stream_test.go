package google_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
				if u.Input != 21 || u.Output != 12 || u.CacheRead != 2000 || u.CacheWrite != 0 || u.Total != 2033 {
					t.Errorf("usage %+v", *u)
				}
				want := (21*1.25 + 12*10 + 2000*0.125) / 1e6
				if math.Abs(u.Cost.Total-want) > 1e-12 {
					t.Errorf("cost %v, want %v", u.Cost.Total, want)
				}
				if m.Provider != "google" || m.Model != "gemini-test" || m.API != "google-generative-ai" || m.Timestamp == 0 {
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
			Name: "proxy [DONE] after the last chunk", Fixture: "text.sse",
			Transform: func(s string) string { return s + "data: [DONE]\n\n" },
			Types:     "start text_start text_delta text_delta text_end done",
		},
		{
			Name: "thinking with a signed answer", Fixture: "thinking.sse",
			Types: "start thinking_start thinking_delta thinking_delta thinking_end text_start text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				th := m.Content[0]
				if th.Type != llm.ContentThinking || th.Thinking != "**Adding numbers**\n\nThe user asks for 2+2. That is 4." {
					t.Errorf("thinking block %+v", th)
				}
				if tx := m.Content[1]; tx.Text != "4" || tx.TextSignature != "CiQBVKhc7kYxThoughtSigText" {
					t.Errorf("text block %+v", tx)
				}
				if u := m.Usage; u.Input != 10 || u.Output != 43 {
					t.Errorf("usage %+v: output must count thoughts", *u)
				}
			},
		},
		{
			Name: "several tool calls, ids missing and repeated", Fixture: "tools.sse",
			Types: "start thinking_start thinking_delta thinking_end text_start text_delta text_end " +
				"toolcall_start toolcall_delta toolcall_end toolcall_start toolcall_delta toolcall_end " +
				"toolcall_start toolcall_delta toolcall_end toolcall_start toolcall_end done",
			Check: func(t *testing.T, m *llm.Message) {
				calls := m.ToolCalls()
				if len(calls) != 4 || m.StopReason != llm.StopReasonToolUse {
					t.Fatalf("calls %+v stop %q", calls, m.StopReason)
				}
				if calls[0].Name != "read" || string(calls[0].Arguments) != `{"path": "README.md","limit": 20}` || calls[0].ThoughtSignature != "EsgBCsUBAdHtim9SigCall1" {
					t.Errorf("first call %+v (%s)", calls[0], calls[0].Arguments)
				}
				if calls[1].ThoughtSignature != "" || string(calls[1].Arguments) != `{"path": "go.mod"}` {
					t.Errorf("second call %+v", calls[1])
				}
				if calls[2].ID != "call-ls" || string(calls[2].Arguments) != "{}" {
					t.Errorf("third call %+v", calls[2])
				}
				if string(calls[3].Arguments) != "{}" {
					t.Errorf("fourth call arguments %s", calls[3].Arguments)
				}
				seen := map[string]bool{}
				for _, c := range calls {
					if c.ID == "" || seen[c.ID] {
						t.Errorf("call id %q missing or repeated", c.ID)
					}
					seen[c.ID] = true
				}
				if !strings.HasPrefix(calls[0].ID, "read_") || !strings.HasPrefix(calls[3].ID, "ls_") {
					t.Errorf("synthesised ids %q %q", calls[0].ID, calls[3].ID)
				}
			},
		},
		{
			Name: "MAX_TOKENS is length", Fixture: "text.sse",
			Transform: func(s string) string { return strings.Replace(s, `"STOP"`, `"MAX_TOKENS"`, 1) },
			Types:     "start text_start text_delta text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.StopReason != llm.StopReasonLength {
					t.Errorf("stop %q", m.StopReason)
				}
			},
		},
		{
			Name: "MAX_TOKENS after whole calls is toolUse", Fixture: "tools.sse",
			Transform: func(s string) string { return strings.Replace(s, `"STOP"`, `"MAX_TOKENS"`, 1) },
			Types: "start thinking_start thinking_delta thinking_end text_start text_delta text_end " +
				"toolcall_start toolcall_delta toolcall_end toolcall_start toolcall_delta toolcall_end " +
				"toolcall_start toolcall_delta toolcall_end toolcall_start toolcall_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.StopReason != llm.StopReasonToolUse {
					t.Errorf("stop %q", m.StopReason)
				}
			},
		},
		{
			Name: "finish reason newer than this code", Fixture: "text.sse",
			Transform: func(s string) string { return strings.Replace(s, `"STOP"`, `"SOMETHING_NEW"`, 1) },
			Types:     "start text_start text_delta text_delta text_end done",
		},
	}
	wiretest.RunCases(t, tests, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, simpleRequest(), func(t *testing.T, c *capture) {
		if c.Path != "/v1beta/models/gemini-test:streamGenerateContent" || c.Query != "alt=sse" {
			t.Errorf("path %q query %q", c.Path, c.Query)
		}
		if got := c.Header.Get("X-Goog-Api-Key"); got != testKey {
			t.Errorf("x-goog-api-key %q", got)
		}
	})
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
		{"400 bad key", 400, nil, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
			[]llm.Reason{llm.ReasonAuth}, "API key not valid", 0},
		{"401", 401, nil, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`,
			[]llm.Reason{llm.ReasonAuth}, "invalid authentication credentials", 0},
		{"403", 403, nil, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.","status":"PERMISSION_DENIED"}}`,
			[]llm.Reason{llm.ReasonAuth, llm.ReasonAuthPermanent}, "unregistered callers", 0},
		{"429 resource exhausted with retry info", 429, map[string]string{"Content-Type": "application/json"},
			`{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`,
			[]llm.Reason{llm.ReasonRateLimit}, "Resource has been exhausted", 17 * time.Second},
		{"429 with retry-after", 429, map[string]string{"Retry-After": "7"},
			`{"error":{"code":429,"message":"Quota exceeded for quota metric 'Generate Content API requests per minute'","status":"RESOURCE_EXHAUSTED"}}`,
			[]llm.Reason{llm.ReasonRateLimit}, "Quota exceeded", 7 * time.Second},
		{"500", 500, nil, `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`,
			[]llm.Reason{llm.ReasonServer, llm.ReasonTimeout}, "internal error", 0},
		{"503", 503, nil, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
			[]llm.Reason{llm.ReasonOverloaded}, "overloaded", 0},
		{"context overflow", 400, nil, `{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}`,
			[]llm.Reason{llm.ReasonContextOverflow}, "exceeds the maximum number of tokens", 0},
		{"404 model", 404, nil, `{"error":{"code":404,"message":"models/gemini-test is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}`,
			[]llm.Reason{llm.ReasonModelNotFound}, "not found", 0},
		{"error array", 400, nil, `[{"error":{"code":400,"message":"* GenerateContentRequest.contents[2].parts: contents.parts must not be empty.","status":"INVALID_ARGUMENT"}}]`,
			[]llm.Reason{llm.ReasonFormat}, "must not be empty", 0},
		{"200 with HTML", 200, map[string]string{"Content-Type": "text/html"}, `<html><head><title>Welcome to nginx!</title></head><body>nginx</body></html>`,
			nil, "nginx", 0},
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
	cut := text[:strings.LastIndex(text, "data: ")]
	tests := []struct {
		name    string
		body    string
		reasons []llm.Reason
		words   []string
		text    string // partial text kept
	}{
		{"error mid-stream", fixture(t, "error_midstream.sse"), []llm.Reason{llm.ReasonOverloaded}, []string{"overloaded"}, "Partial answ"},
		{"overflow mid-stream", strings.Replace(fixture(t, "error_midstream.sse"), `{"code": 503,"message": "The model is overloaded. Please try again later.","status": "UNAVAILABLE"}`,
			`{"code": 400,"message": "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","status": "INVALID_ARGUMENT"}`, 1),
			[]llm.Reason{llm.ReasonContextOverflow}, []string{"exceeds the maximum number of tokens"}, "Partial answ"},
		{"resource exhausted mid-stream", strings.Replace(fixture(t, "error_midstream.sse"), `{"code": 503,"message": "The model is overloaded. Please try again later.","status": "UNAVAILABLE"}`,
			`{"code": 429,"message": "Resource has been exhausted (e.g. check quota).","status": "RESOURCE_EXHAUSTED"}`, 1),
			[]llm.Reason{llm.ReasonRateLimit}, []string{"Resource has been exhausted"}, "Partial answ"},
		{"safety stop", fixture(t, "safety.sse"), nil, []string{"SAFETY", "safety filters", "DANGEROUS_CONTENT high", "Rephrase"}, "Here is how to"},
		{"recitation stop", strings.Replace(fixture(t, "safety.sse"), `"SAFETY"`, `"RECITATION"`, 1), nil, []string{"RECITATION", "recited"}, "Here is how to"},
		{"prohibited content stop", strings.Replace(fixture(t, "safety.sse"), `"SAFETY"`, `"PROHIBITED_CONTENT"`, 1), nil, []string{"PROHIBITED_CONTENT"}, "Here is how to"},
		{"SPII stop", strings.Replace(fixture(t, "safety.sse"), `"SAFETY"`, `"SPII"`, 1), nil, []string{"SPII", "personal information"}, "Here is how to"},
		{"blocklist stop", strings.Replace(fixture(t, "safety.sse"), `"SAFETY"`, `"BLOCKLIST"`, 1), nil, []string{"BLOCKLIST"}, "Here is how to"},
		{"malformed function call", strings.Replace(fixture(t, "safety.sse"), `"SAFETY"`, `"MALFORMED_FUNCTION_CALL"`, 1), nil, []string{"MALFORMED_FUNCTION_CALL", "could not be parsed"}, "Here is how to"},
		{"prompt blocked", fixture(t, "prompt_blocked.sse"), nil, []string{"prompt blocked", "PROHIBITED_CONTENT", "Rephrase"}, ""},
		{"cut without a finish reason", cut, []llm.Reason{llm.ReasonNetwork}, []string{"ended before"}, "Hello, world."},
		{"cut mid-line", cut + `data: {"candidates": [{"content": {"pa`, []llm.Reason{llm.ReasonNetwork}, []string{"ended before"}, "Hello, world."},
		{"cut mid-line after the finish", text + `data: {"candidates": [{"content": {"pa`, []llm.Reason{llm.ReasonNetwork}, []string{"ended before"}, "Hello, world."},
		{"invalid JSON chunk", strings.Replace(text, `{"text": ", world."}],`, `{"text": ", world."}]`, 1), nil, []string{"not valid JSON"}, "Hello"},
		{"not an event stream", "data: {\"candidates\": []}\n\nthis is not an event stream\n", []llm.Reason{llm.ReasonNetwork}, []string{"ended before"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, 200, nil, tt.body, nil)
			r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
			wiretest.CheckStreamFailure(t, r, wiretest.StreamFailure{Reasons: tt.reasons, Words: tt.words, Text: tt.text})
			if txt := llm.ErrorText(r.Err); txt == "" || strings.Contains(txt, testKey) {
				t.Errorf("user text %q", txt)
			}
		})
	}
}

// Cancelling the context mid-stream closes the body at once and keeps the
// partial output with stop reason aborted.
func TestAbortKeepsPartial(t *testing.T) {
	wiretest.AbortKeepsPartial(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) },
		"data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Half a thou\"}],\"role\": \"model\"}}]}\n\n", "Half a thou")
}

// A cancelled context before the call gives one bare error and no request.
func TestPreCancelled(t *testing.T) {
	wiretest.Cancelled(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, fixture(t, "text.sse"), nil)
}

// Breaking out of the loop releases the connection.
func TestConsumerBreak(t *testing.T) {
	wiretest.ConsumerBreak(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) },
		"data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"x\"}],\"role\": \"model\"}}]}\n\n")
}

// Partial arguments stay valid JSON on the single delta of a whole call.
func TestCallArgumentsAreJSON(t *testing.T) {
	srv := serve(t, 200, nil, fixture(t, "tools.sse"), nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	for i, a := range r.Args {
		if !json.Valid([]byte(a)) {
			t.Errorf("delta %d arguments %q", i, a)
		}
	}
	if len(r.Deltas) != 3 {
		t.Errorf("%d deltas, want one per call with arguments", len(r.Deltas))
	}
}

// A cancellation cause is kept on the error.
func TestCancelCause(t *testing.T) {
	wiretest.Cancelled(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, fixture(t, "text.sse"), errors.New("user pressed ctrl-c"))
}

// Without alt=sse Gemini answers with a JSON array of the same chunks.
func TestJSONArrayReply(t *testing.T) {
	var chunks []string
	for _, line := range strings.Split(fixture(t, "tools.sse"), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			chunks = append(chunks, d)
		}
	}
	tests := []struct{ name, body, types string }{
		{"array", "[" + strings.Join(chunks, ",\n") + "]", "start thinking_start thinking_delta thinking_end text_start text_delta text_end " +
			"toolcall_start toolcall_delta toolcall_end toolcall_start toolcall_delta toolcall_end " +
			"toolcall_start toolcall_delta toolcall_end toolcall_start toolcall_end done"},
		{"one response", `{"candidates": [{"content": {"parts": [{"text": "Whole."}],"role": "model"},"finishReason": "STOP"}],"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": 2}}`,
			"start text_start text_delta text_end done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, 200, map[string]string{"Content-Type": "application/json; charset=UTF-8"}, tt.body, nil)
			r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if got := typesString(r.Types); got != tt.types {
				t.Errorf("events\n got %s\nwant %s", got, tt.types)
			}
		})
	}
	t.Run("array without a finish reason", func(t *testing.T) {
		srv := serve(t, 200, map[string]string{"Content-Type": "application/json"}, "["+chunks[0]+"]", nil)
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if llm.ReasonOf(r.Err) != llm.ReasonNetwork || r.Msg.StopReason != llm.StopReasonError {
			t.Fatalf("err %v", r.Err)
		}
	})
}

// A proxy that labels the stream text/plain is still read as a stream.
func TestMislabelledStream(t *testing.T) {
	srv := serve(t, 200, map[string]string{"Content-Type": "text/plain; charset=utf-8"}, fixture(t, "text.sse"), nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	if r.Err != nil || r.Msg.Text() != "Hello, world." {
		t.Fatalf("err %v text %q", r.Err, r.Msg.Text())
	}
}
