package llm

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// wildCases are failure texts seen in the wild that the classifier once
// read wrongly (issue 18, item 6): each with the provider and status it
// came with.
var wildCases = []struct {
	provider string
	status   int
	text     string
	want     Reason
}{
	{"google", 400, `{"error":{"code":400,"message":"API key expired or revoked.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_REVOKED"}]}}`, ReasonAuthPermanent},
	{"", 0, "API_KEY_REVOKED", ReasonAuthPermanent},
	{"openai", 401, `{"error":{"message":"This api key deactivated by the owner.","type":"invalid_request_error"}}`, ReasonAuthPermanent},
	{"", 0, "api key deactivated", ReasonAuthPermanent},
	{"", 0, "got a 402 from the API", ReasonBilling},
	{"", 0, "upstream returned 402", ReasonBilling},
	{"", 0, "404 status code (no body)", ReasonModelNotFound},
	{"", 0, "model_cooldown: All credentials for model gpt-5 are cooling down", ReasonRateLimit},
	{"", 0, "stream closed", ReasonNetwork},
	{"", 0, "stream was aborted", ReasonNetwork},
	{"", 0, "read ECONNRESET", ReasonNetwork},
	{"", 0, "write ENETRESET", ReasonNetwork},
	{"", 0, "reason: error", ReasonNetwork},
	{"anthropic", 0, `{"type":"error","error":{"type":"api_error","message":"An unknown error occurred"}}`, ReasonServer},
	{"anthropic", 0, "An unknown error occurred", ReasonServer},
	{"google", 0, "Unhandled stop reason: MALFORMED_FUNCTION_CALL", ReasonFormat},
	{"google", 0, "MALFORMED_FUNCTION_CALL: the model produced a function call that could not be parsed", ReasonFormat},
	{"anthropic", 0, `{"type":"error","error":{"type":"api_error","message":"invalid input format"}}`, ReasonFormat},
	{"", 503, "service unavailable due to capacity limits", ReasonOverloaded},
	{"", 0, "service unavailable due to capacity limits", ReasonOverloaded},
	{"", 0, "context_window_exceeded", ReasonContextOverflow},
	{"", 0, "Unhandled stop reason: context_window_exceeded", ReasonContextOverflow},
	{"", 400, "input length would exceed context budget", ReasonContextOverflow},
	{"", 400, `{"error":{"code":400,"message":"request (20480 tokens) exceeds available context size (16384 tokens)","type":"exceed_context_size_error"}}`, ReasonContextOverflow},
	{"", 0, "request (20480 tokens) exceeds available context size (16384 tokens)", ReasonContextOverflow},
	// Behind a wrapper's prefix the body is read as JSON.
	{"openai-codex", 0, `Codex error: {"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_in_seconds":1800}}`, ReasonRateLimit},
	{"openai-codex", 0, `Codex error: {"error":{"code":"insufficient_quota","message":"You exceeded your current quota."}}`, ReasonBilling},
}

func TestClassifyWildTexts(t *testing.T) {
	for _, c := range wildCases {
		t.Run(c.text, func(t *testing.T) {
			if got := ClassifyFor(c.provider, c.status, c.text); got != c.want {
				t.Errorf("ClassifyFor(%q, %d, %q) = %s, want %s", c.provider, c.status, c.text, got, c.want)
			}
			if got := NewHTTPError(c.provider, "m", c.status, nil, []byte(c.text)).Reason; got != c.want {
				t.Errorf("NewHTTPError reason %s, want %s", got, c.want)
			}
		})
	}
}

// The words stay what they mean elsewhere: an unknown error at another
// provider is not known to be transient, and a text that only mentions
// cooling down is not a rate limit.
func TestClassifyWildTextsStayNarrow(t *testing.T) {
	for _, c := range []struct {
		provider, text string
	}{
		{"openrouter", "An unknown error occurred"},
		{"", "all credentials for model x are cooling down"},
		{"", "the reason: error handling was skipped"},
	} {
		if got := ClassifyFor(c.provider, 0, c.text); got != ReasonUnknown {
			t.Errorf("ClassifyFor(%q, %q) = %s, want unknown", c.provider, c.text, got)
		}
	}
}

func TestPrefixedJSONBody(t *testing.T) {
	e := NewStreamError("openai-codex", "gpt-5-codex", `Codex error: {"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":1800}}`)
	if e.Message != "usage_limit_reached: The usage limit has been reached" {
		t.Errorf("message %q", e.Message)
	}
	// Prose with a colon and braces later on is not a prefix.
	e = NewStreamError("", "", `the tool said: {not json} and stopped`)
	if e.Message != "the tool said: {not json} and stopped" {
		t.Errorf("message %q", e.Message)
	}
}

// TestErrorTextWild pins what a person reads for the failures of issue 18,
// item 7.
func TestErrorTextWild(t *testing.T) {
	cases := []struct {
		name        string
		err         error
		contains    []string
		notContains []string
	}{
		{"billing names provider and model",
			NewHTTPError("openrouter", "anthropic/claude-sonnet-4.5", 402, nil, []byte(`{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits","code":402}}`)),
			[]string{"openrouter", "anthropic/claude-sonnet-4.5", "billing"}, []string{"The provider refused"}},
		{"billing from a stream text",
			NewStreamError("anthropic", "claude-opus-4-1", "Your credit balance is too low to access the Anthropic API."),
			[]string{"anthropic", "claude-opus-4-1", "billing"}, nil},
		{"disk full is local",
			fmt.Errorf("append to session: %w", errors.New("disk full")),
			[]string{"disk is full"}, []string{"provider said", "The provider"}},
		{"a failed file operation is local",
			fmt.Errorf("write session: %w", &fs.PathError{Op: "open", Path: "/ro/s.jsonl", Err: syscall.EROFS}),
			[]string{"local problem", "read-only file system"}, []string{"provider said"}},
		{"an error of ours is not the provider's",
			errors.New("hook config: unexpected end of JSON input"),
			[]string{"local problem", "hook config"}, []string{"provider said"}},
		{"oauth refresh",
			NewStreamError("openai-codex", "gpt-5-codex", "OAuth token refresh failed: invalid_grant"),
			[]string{"OAuth", "Sign in again"}, []string{"rejected the API key"}},
		{"oauth refresh 401",
			NewHTTPError("anthropic", "claude", 401, nil, []byte(`{"error":"invalid_grant","error_description":"Refresh token not found or invalid"}`)),
			[]string{"OAuth", "Sign in again"}, []string{"rejected the API key"}},
		{"a plain bad key is still a key",
			NewHTTPError("openai", "gpt-5", 401, nil, []byte(`{"error":{"message":"Incorrect API key provided"}}`)),
			[]string{"rejected the API key"}, []string{"OAuth"}},
		{"codex body behind a prefix",
			NewStreamError("openai-codex", "gpt-5-codex", `Codex error: {"error":{"type":"server_error","message":"The server had an error processing your request"}}`),
			[]string{"internal error", "The server had an error processing your request"}, []string{`{"error"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ErrorText(c.err)
			for _, s := range c.contains {
				if !strings.Contains(got, s) {
					t.Errorf("ErrorText = %q, want it to contain %q", got, s)
				}
			}
			for _, s := range c.notContains {
				if strings.Contains(got, s) {
					t.Errorf("ErrorText = %q, must not contain %q", got, s)
				}
			}
		})
	}
}

func TestOverflowLimit(t *testing.T) {
	cases := []struct {
		text string
		want int
	}{
		{"This model's maximum context length is 15360 tokens. However, your messages resulted in 17000 tokens.", 15360},
		{"prompt is too long: 210000 tokens > 200000 maximum", 200000},
		{"request (20480 tokens) exceeds the available context size (16384 tokens), try increasing it", 16384},
		{"request (20480 tokens) exceeds available context size (16384 tokens)", 16384},
		{"input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length or `max_tokens` and try again", 200000},
		{"Prompt contains 40000 tokens, too large for model with 32768 maximum context length", 32768},
		{"This model's maximum prompt length is 131072 but the request contains 140000 tokens.", 131072},
		{"The number of tokens to keep from the initial prompt is greater than the context length of 4096", 4096},
		{"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).", 1048575},
		{"This model's maximum context length is 1,048,576 tokens.", 1048576},
		{"context window exceeded", 0},
		{"rate limit: 30000 tokens per minute", 0},
	}
	for _, c := range cases {
		got, ok := OverflowLimit(c.text)
		if got != c.want || ok != (c.want > 0) {
			t.Errorf("OverflowLimit(%q) = %d, %v; want %d", c.text, got, ok, c.want)
		}
	}
}
