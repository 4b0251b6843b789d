package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
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
			Name: "plain text with usage-only chunk", Fixture: "text.sse",
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
				if m.Provider != "openai" || m.Model != "gpt-test" || m.API != "openai-completions" || m.Timestamp == 0 {
					t.Errorf("metadata %q %q %q %d", m.Provider, m.Model, m.API, m.Timestamp)
				}
			},
		},
		{
			Name: "CRLF and comments", Fixture: "text.sse",
			Transform: func(s string) string {
				return ": OPENROUTER PROCESSING\r\n\r\n" + strings.ReplaceAll(s, "\n", "\r\n")
			},
			Types: "start text_start text_delta text_delta text_end done",
		},
		{
			Name: "no [DONE] after finish_reason", Fixture: "text.sse",
			Transform: func(s string) string { return strings.Replace(s, "data: [DONE]\n\n", "", 1) },
			Types:     "start text_start text_delta text_delta text_end done",
		},
		{
			Name: "reasoning_content", Fixture: "reasoning.sse",
			Types: "start thinking_start thinking_delta thinking_delta thinking_end text_start text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				th := m.Content[0]
				if th.Thinking != "The user asks 2+2. That is 4." || th.ThinkingSignature != "reasoning_content" {
					t.Errorf("thinking %+v", th)
				}
				if m.Text() != "4" || m.Usage.Output != 20 || m.Usage.Input != 30 {
					t.Errorf("text %q usage %+v", m.Text(), *m.Usage)
				}
			},
		},
		{
			Name: "two tool calls, one with empty arguments", Fixture: "tools.sse",
			Types: "start text_start text_delta text_end toolcall_start toolcall_delta toolcall_delta toolcall_end toolcall_start toolcall_end done",
			Check: func(t *testing.T, m *llm.Message) {
				calls := m.ToolCalls()
				if len(calls) != 2 || m.StopReason != llm.StopReasonToolUse {
					t.Fatalf("calls %+v stop %q", calls, m.StopReason)
				}
				if calls[0].ID != "call_A" || calls[0].Name != "read" || string(calls[0].Arguments) != `{"path": "README.md", "limit": 20}` {
					t.Errorf("first call %+v (%s)", calls[0], calls[0].Arguments)
				}
				if calls[1].ID != "call_B" || calls[1].Name != "ls" || string(calls[1].Arguments) != `{}` {
					t.Errorf("second call %+v (%s)", calls[1], calls[1].Arguments)
				}
				if m.Usage.Input != 400 || m.Usage.Output != 61 {
					t.Errorf("usage %+v", *m.Usage)
				}
			},
		},
		{
			Name: "finish_reason stop after tool calls", Fixture: "tools.sse",
			Transform: func(s string) string {
				return strings.Replace(s, `"finish_reason":"tool_calls"`, `"finish_reason":"stop"`, 1)
			},
			Types: "start text_start text_delta text_end toolcall_start toolcall_delta toolcall_delta toolcall_end toolcall_start toolcall_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.StopReason != llm.StopReasonToolUse {
					t.Errorf("stop %q", m.StopReason)
				}
			},
		},
		{
			Name: "max_tokens from a proxy", Fixture: "text.sse",
			Transform: func(s string) string {
				return strings.Replace(s, `"finish_reason":"stop"`, `"finish_reason":"max_tokens"`, 1)
			},
			Types: "start text_start text_delta text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.StopReason != llm.StopReasonLength {
					t.Errorf("stop %q", m.StopReason)
				}
			},
		},
		{
			Name: "length", Fixture: "text.sse",
			Transform: func(s string) string {
				return strings.Replace(s, `"finish_reason":"stop"`, `"finish_reason":"length"`, 1)
			},
			Types: "start text_start text_delta text_delta text_end done",
			Check: func(t *testing.T, m *llm.Message) {
				if m.StopReason != llm.StopReasonLength {
					t.Errorf("stop %q", m.StopReason)
				}
			},
		},
	}
	wiretest.RunCases(t, tests, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, simpleRequest(), nil)
}

func chunkJSON(delta map[string]any, finish any) string {
	b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	return "data: " + string(b) + "\n\n"
}

func argsDelta(index int, id, name, args string) string {
	fn := map[string]any{"arguments": args}
	tc := map[string]any{"index": index, "function": fn}
	if id != "" {
		tc["id"], tc["type"], fn["name"] = id, "function", name
	}
	return chunkJSON(map[string]any{"tool_calls": []any{tc}}, nil)
}

// The arguments of a call arrive split at every character boundary, and
// one character per chunk; the final arguments are always the same.
func TestToolArgsEveryBoundary(t *testing.T) {
	args := `{"command": "grep -rn \"caf\u00e9\" .", "paths": ["a", "b/ü"], "n": -1.5e2, "deep": {"x": [true, null]}}`
	tail := chunkJSON(map[string]any{}, "tool_calls") + "data: [DONE]\n\n"
	var want any
	if err := json.Unmarshal([]byte(args), &want); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, body string) {
		srv := serve(t, 200, nil, body, nil)
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if strings.Join(r.Deltas, "") != args {
			t.Fatalf("deltas joined to %q", strings.Join(r.Deltas, ""))
		}
		calls := r.Msg.ToolCalls()
		var got any
		if len(calls) != 1 || json.Unmarshal(calls[0].Arguments, &got) != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("calls %+v", calls)
		}
	}
	for i := 0; i <= len(args); i++ {
		if i < len(args) && !utf8.RuneStart(args[i]) {
			continue
		}
		body := argsDelta(0, "call_1", "bash", args[:i]) + argsDelta(0, "", "", args[i:]) + tail
		t.Run(fmt.Sprint("split at ", i), func(t *testing.T) { check(t, body) })
	}
	t.Run("one character per chunk", func(t *testing.T) {
		var sb strings.Builder
		sb.WriteString(argsDelta(0, "call_1", "bash", ""))
		for _, c := range args {
			sb.WriteString(argsDelta(0, "", "", string(c)))
		}
		sb.WriteString(tail)
		check(t, sb.String())
	})
}

// Tool-call ids: a new id on the same index starts a new call; a call
// without any id gets one.
func TestToolCallIndexing(t *testing.T) {
	body := argsDelta(0, "call_1", "a", `{"x":`) + argsDelta(0, "", "", `1}`) +
		argsDelta(0, "call_2", "b", `{}`) + // same index, new id
		chunkJSON(map[string]any{"tool_calls": []any{map[string]any{"index": 1, "function": map[string]any{"name": "c", "arguments": `{"y":2}`}}}}, nil) +
		chunkJSON(map[string]any{}, "tool_calls") + "data: [DONE]\n\n"
	srv := serve(t, 200, nil, body, nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var got []string
	for _, c := range r.Msg.ToolCalls() {
		got = append(got, fmt.Sprintf("%s %s %s", c.ID, c.Name, c.Arguments))
	}
	want := []string{`call_1 a {"x":1}`, `call_2 b {}`, `call_2 c {"y":2}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		// the synthesized id is call_<n>: check its shape separately
		if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || !strings.HasSuffix(got[2], ` c {"y":2}`) {
			t.Fatalf("calls\n got %q\nwant %q", got, want)
		}
	}
	if c := r.Msg.ToolCalls()[2]; c.ID == "" || c.ID == "call_1" || c.ID == "call_2" {
		t.Errorf("synthesized id %q is empty or collides", c.ID)
	}
}

// Call ids are unique across a transcript: a call without one gets a
// fresh id in every reply, and an id an earlier call of the same message
// already has (a server numbering calls per message) is replaced.
func TestToolCallIDsUnique(t *testing.T) {
	body := argsDelta(0, "call_0", "a", `{}`) + argsDelta(1, "call_0", "b", `{}`) +
		chunkJSON(map[string]any{"tool_calls": []any{map[string]any{"index": 2, "function": map[string]any{"name": "c", "arguments": `{}`}}}}, nil) +
		chunkJSON(map[string]any{}, "tool_calls") + "data: [DONE]\n\n"
	srv := serve(t, 200, nil, body, nil)
	seen := map[string]bool{"call_0": true}
	for range 2 {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		calls := r.Msg.ToolCalls()
		if len(calls) != 3 || calls[0].ID != "call_0" || calls[0].Name != "a" || calls[1].Name != "b" || calls[2].Name != "c" {
			t.Fatalf("calls %+v", calls)
		}
		for _, c := range calls[1:] {
			if c.ID == "" || seen[c.ID] {
				t.Fatalf("call %s has id %q, seen before", c.Name, c.ID)
			}
			seen[c.ID] = true
		}
	}
}

// A server that repeats a call's id on every chunk, and gives two calls
// the same id: the second call's id is replaced, and its repeated id on
// later chunks still means that call. An id arriving late for a call that
// had none does not start another call.
func TestToolCallIDRepeated(t *testing.T) {
	body := argsDelta(0, "call_0", "a", `{"x":`) + argsDelta(0, "call_0", "a", `1}`) +
		argsDelta(1, "call_0", "b", `{"y":`) + argsDelta(1, "call_0", "b", `2}`) +
		chunkJSON(map[string]any{"tool_calls": []any{map[string]any{"index": 2, "function": map[string]any{"name": "c", "arguments": `{"z":`}}}}, nil) +
		argsDelta(2, "call_late", "c", `3}`) +
		chunkJSON(map[string]any{}, "tool_calls") + "data: [DONE]\n\n"
	srv := serve(t, 200, nil, body, nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var got []string
	for _, c := range r.Msg.ToolCalls() {
		got = append(got, c.Name+" "+string(c.Arguments))
	}
	if want := []string{`a {"x":1}`, `b {"y":2}`, `c {"z":3}`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	if calls := r.Msg.ToolCalls(); calls[0].ID != "call_0" || calls[1].ID == "call_0" || calls[2].ID == calls[1].ID {
		t.Errorf("ids %q %q %q", calls[0].ID, calls[1].ID, calls[2].ID)
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		reasons []llm.Reason
		words   string
		retry   time.Duration
	}{
		{"401", 401, nil, `{"error":{"message":"Incorrect API key provided: sk-proj-****6789. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			[]llm.Reason{llm.ReasonAuth, llm.ReasonAuthPermanent}, "Incorrect API key", 0},
		{"402", 402, nil, `{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits","code":402}}`,
			[]llm.Reason{llm.ReasonBilling}, "Insufficient credits", 0},
		{"429 quota", 429, nil, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			nil, "exceeded your current quota", 0},
		{"429 with retry-after-ms", 429, map[string]string{"Retry-After-Ms": "1500", "Content-Type": "application/json"}, `{"error":{"message":"Rate limit reached for gpt-test in organization org-x on tokens per min (TPM): Limit 30000, Used 30000, Requested 900.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			[]llm.Reason{llm.ReasonRateLimit}, "Rate limit reached", 1500 * time.Millisecond},
		{"500", 500, nil, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			[]llm.Reason{llm.ReasonServer, llm.ReasonTimeout}, "The server had an error", 0},
		{"529", 529, nil, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`,
			[]llm.Reason{llm.ReasonOverloaded}, "overloaded", 0},
		{"context overflow", 400, nil, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 145000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			nil, "maximum context length", 0},
		{"404 model", 404, nil, `{"error":{"message":"The model gpt-nope does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			[]llm.Reason{llm.ReasonModelNotFound}, "does not exist", 0},
		{"ollama plain error", 404, nil, `{"error":"model \"qwen9\" not found, try pulling it first"}`,
			[]llm.Reason{llm.ReasonModelNotFound}, "try pulling it first", 0},
		{"200 with HTML", 200, map[string]string{"Content-Type": "text/html; charset=utf-8"}, `<!DOCTYPE html><html><head><title>Login required</title></head><body>portal</body></html>`,
			nil, "Login required", 0},
		{"200 with unexpected type", 200, map[string]string{"Content-Type": "application/xml"}, `<error>nope</error>`,
			nil, "application/xml", 0},
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
	cut := text[:strings.Index(text, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764370000,"model":"gpt-test","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{},`)]
	tests := []struct {
		name    string
		body    string
		reasons []llm.Reason
		words   string
		text    string
	}{
		{"error chunk mid-stream", fixture(t, "error_midstream.sse"), nil, "overloaded", "Partial answ"},
		{"plain error object", chunkJSON(map[string]any{"content": "Hi"}, nil) + `data: {"error":{"message":"Internal error while streaming","type":"server_error"}}` + "\n\n",
			nil, "Internal error while streaming", "Hi"},
		{"cut without finish or [DONE]", cut, []llm.Reason{llm.ReasonNetwork}, "ended before", "Hello, world."},
		{"cut mid-line", cut + `data: {"id":"chatcmpl-1","choi`, []llm.Reason{llm.ReasonNetwork}, "ended before", "Hello, world."},
		{"invalid JSON chunk", strings.Replace(text, `{"content":", world."}`, `{"content":", world."`, 1), nil, "not valid JSON", "Hello"},
		{"malformed SSE", "HTTP/1.1 200 OK\nthis is not an event stream\n", []llm.Reason{llm.ReasonNetwork}, "ended before", ""},
		{"content filter", strings.Replace(text, `"finish_reason":"stop"`, `"finish_reason":"content_filter"`, 1), nil, "content_filter", "Hello, world."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, 200, nil, tt.body, nil)
			r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
			wiretest.CheckStreamFailure(t, r, wiretest.StreamFailure{Reasons: tt.reasons, Words: []string{tt.words}, Text: tt.text})
		})
	}
}

func TestAbortKeepsPartial(t *testing.T) {
	wiretest.AbortKeepsPartial(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) },
		chunkJSON(map[string]any{"role": "assistant", "content": "Half a thou"}, nil), "Half a thou")
}

func TestConsumerBreak(t *testing.T) {
	wiretest.ConsumerBreak(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) },
		chunkJSON(map[string]any{"role": "assistant", "content": "x"}, nil))
}

// A server that ignores "stream": true and answers with one JSON object
// still gives a normal stream of events.
func TestNonStreamingAnswer(t *testing.T) {
	tests := []struct {
		name, body, types string
		stop              llm.StopReason
		errWords          string
	}{
		{"completion with a tool call",
			`{"id":"chatcmpl-9","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Let me look.","reasoning_content":"Need a file.","tool_calls":[{"id":"call_J","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":4}}`,
			"start thinking_start thinking_delta thinking_end text_start text_delta text_end toolcall_start toolcall_delta toolcall_end done", llm.StopReasonToolUse, ""},
		{"error object", `{"error":{"message":"Model is loading, please retry","type":"server_error","code":503}}`,
			"start error", llm.StopReasonError, "Model is loading"},
		{"not a completion", `{"hello":"world"}`, "start error", llm.StopReasonError, "not a chat completion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, 200, map[string]string{"Content-Type": "application/json"}, tt.body, nil)
			r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
			if got := typesString(r.Types); got != tt.types {
				t.Fatalf("events %s (err %v)", got, r.Err)
			}
			if r.Msg.StopReason != tt.stop {
				t.Errorf("stop %q", r.Msg.StopReason)
			}
			if tt.errWords != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tt.errWords)) {
				t.Errorf("error %v does not quote %q", r.Err, tt.errWords)
			}
			if tt.stop == llm.StopReasonToolUse {
				c := r.Msg.ToolCalls()[0]
				if c.ID != "call_J" || string(c.Arguments) != `{"path":"x"}` || r.Msg.Usage.Input != 9 {
					t.Errorf("call %+v usage %+v", c, *r.Msg.Usage)
				}
			}
		})
	}
}

// A stream mislabelled text/plain is still read as a stream.
func TestMislabelledStream(t *testing.T) {
	srv := serve(t, 200, map[string]string{"Content-Type": "text/plain; charset=utf-8"}, fixture(t, "text.sse"), nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	if r.Err != nil || r.Msg.Text() != "Hello, world." {
		t.Fatalf("err %v text %q", r.Err, r.Msg.Text())
	}
}
