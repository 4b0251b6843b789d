package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
)

func TestDecide(t *testing.T) {
	noJitter := RetryPolicy{Jitter: func() float64 { return 0 }}
	fail := func(r llm.Reason) Outcome { return Outcome{End: "error", Failure: r, Err: errors.New(string(r))} }
	tests := []struct {
		name   string
		o      Outcome
		s      State
		action Action
		reason string
		delay  time.Duration
		msg    string
	}{
		{"success finishes", Outcome{End: "stop"}, State{}, ActionFinish, "stop", 0, ""},
		{"max turns finishes", Outcome{End: "max_turns"}, State{}, ActionFinish, "max_turns", 0, ""},
		{"abort finishes", Outcome{End: "aborted"}, State{}, ActionFinish, "aborted", 0, ""},
		{"overflow compacts first", fail(llm.ReasonContextOverflow), State{}, ActionCompact, "context_overflow", 0, "(1/3)"},
		{"overflow compacts a third time", fail(llm.ReasonContextOverflow), State{OverflowCompactions: 2}, ActionCompact, "context_overflow", 0, "(3/3)"},
		{"overflow after the attempt's compaction retries without compacting",
			Outcome{End: "error", Failure: llm.ReasonContextOverflow, Compacted: true}, State{OverflowCompactions: 1}, ActionOverflowRetry, "context_overflow", 0, "(2/3)"},
		{"overflow after three compactions truncates", fail(llm.ReasonContextOverflow), State{OverflowCompactions: 3}, ActionTruncate, "context_overflow", 0, "shortening"},
		{"overflow after the attempt compacted and all tries used truncates",
			Outcome{End: "error", Failure: llm.ReasonContextOverflow, Compacted: true}, State{OverflowCompactions: 3}, ActionTruncate, "context_overflow", 0, ""},
		{"overflow after truncation fails for the user", fail(llm.ReasonContextOverflow), State{OverflowCompactions: 3, TruncationTried: true}, ActionFail, "context_overflow", 0, "new session"},
		{"timeout with a big prompt compacts", Outcome{End: "error", Failure: llm.ReasonTimeout, PromptTokens: 70_000}, State{Window: 100_000}, ActionTimeoutCompact, "timeout", 0, "compacting"},
		{"timeout at exactly 65% retries", Outcome{End: "error", Failure: llm.ReasonTimeout, PromptTokens: 65_000}, State{Window: 100_000}, ActionRetry, "timeout", 2 * time.Second, ""},
		{"timeout compactions are capped at 2", Outcome{End: "error", Failure: llm.ReasonTimeout, PromptTokens: 90_000}, State{Window: 100_000, TimeoutCompactions: 2}, ActionRetry, "timeout", 2 * time.Second, ""},
		{"overloaded retries after 2 s", fail(llm.ReasonOverloaded), State{}, ActionRetry, "overloaded", 2 * time.Second, "(1/3)"},
		{"second retry waits 4 s", fail(llm.ReasonServer), State{Retries: 1}, ActionRetry, "server", 4 * time.Second, "(2/3)"},
		{"network retries", fail(llm.ReasonNetwork), State{Retries: 2}, ActionRetry, "network", 8 * time.Second, "(3/3)"},
		{"retries are capped", fail(llm.ReasonOverloaded), State{Retries: 3}, ActionFail, "overloaded", 0, "gave up after 3"},
		{"rate limit honours Retry-After", Outcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: 7 * time.Second}, State{}, ActionRetry, "rate_limit", 7 * time.Second, ""},
		{"a short Retry-After does not shorten the backoff", Outcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: time.Second}, State{Retries: 1}, ActionRetry, "rate_limit", 4 * time.Second, ""},
		{"Retry-After of 60 s is waited", Outcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: 60 * time.Second}, State{}, ActionRetry, "rate_limit", 60 * time.Second, ""},
		{"Retry-After over 60 s fails", Outcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: 90 * time.Second}, State{}, ActionFail, "rate_limit", 0, "asked to wait 1m30s"},
		{"auth is not retried", fail(llm.ReasonAuth), State{}, ActionFail, "auth", 0, llm.ReasonAuth.UserMessage()},
		{"auth with a profile left rotates", fail(llm.ReasonAuth), State{ProfilesLeft: 1}, ActionRotateProfile, "auth", 0, "next auth profile"},
		{"billing with a profile left rotates", fail(llm.ReasonBilling), State{ProfilesLeft: 2}, ActionRotateProfile, "billing", 0, ""},
		{"rate limit with a profile left rotates at once", fail(llm.ReasonRateLimit), State{ProfilesLeft: 1}, ActionRotateProfile, "rate_limit", 0, ""},
		{"overloaded retries the same profile", fail(llm.ReasonOverloaded), State{ProfilesLeft: 1}, ActionRetry, "overloaded", 2 * time.Second, ""},
		{"overflow never rotates", fail(llm.ReasonContextOverflow), State{ProfilesLeft: 1}, ActionCompact, "context_overflow", 0, ""},
		{"overflow never falls back", fail(llm.ReasonContextOverflow), State{OverflowCompactions: 3, TruncationTried: true, FallbacksLeft: 1}, ActionFail, "context_overflow", 0, ""},
		{"retries exhausted fall back", fail(llm.ReasonOverloaded), State{Retries: 3, FallbacksLeft: 1}, ActionFallbackModel, "overloaded", 0, "after 3 retries"},
		{"retries come before the fallback", fail(llm.ReasonOverloaded), State{Retries: 2, FallbacksLeft: 1}, ActionRetry, "overloaded", 8 * time.Second, ""},
		{"auth on the last profile falls back", fail(llm.ReasonAuth), State{FallbacksLeft: 1}, ActionFallbackModel, "auth", 0, ""},
		{"profiles come before the fallback", fail(llm.ReasonAuth), State{ProfilesLeft: 1, FallbacksLeft: 1}, ActionRotateProfile, "auth", 0, ""},
		{"unknown model falls back", fail(llm.ReasonModelNotFound), State{FallbacksLeft: 2}, ActionFallbackModel, "model_not_found", 0, ""},
		{"a long Retry-After falls back", Outcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: 5 * time.Minute}, State{FallbacksLeft: 1}, ActionFallbackModel, "rate_limit", 0, ""},
		{"format falls back when a model is left (failover.Next)", fail(llm.ReasonFormat), State{FallbacksLeft: 1}, ActionFallbackModel, "format", 0, ""},
		{"a refused thinking level is lowered", Outcome{End: "error", Failure: llm.ReasonFormat, Message: `thinking level "high" is not supported; supported values are: "low"`},
			State{AttemptedThinking: []llm.ThinkingLevel{llm.ThinkingHigh}}, ActionThinkingFallback, "format", 0, "thinking low"},
		{"billing is not retried", fail(llm.ReasonBilling), State{}, ActionFail, "billing", 0, llm.ReasonBilling.UserMessage()},
		{"format is not retried", fail(llm.ReasonFormat), State{}, ActionFail, "format", 0, ""},
		{"billing names the provider and the model",
			Outcome{End: "error", Failure: llm.ReasonBilling, Err: llm.NewHTTPError("openrouter", "anthropic/claude-opus-4", 402, nil, []byte(`{"error":{"message":"Insufficient credits","code":402}}`))},
			State{}, ActionFail, "billing", 0, "openrouter refused the request for anthropic/claude-opus-4 for billing reasons"},
		{"a failed OAuth refresh is not a bad key",
			Outcome{End: "error", Failure: llm.ReasonAuth, Err: llm.NewStreamError("openai-codex", "gpt-5-codex", "OAuth token refresh failed: invalid_grant")},
			State{}, ActionFail, "auth", 0, "Sign in again"},
		{"unclassified error fails as unknown", Outcome{End: "error"}, State{}, ActionFail, "unknown", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.o, tc.s, noJitter)
			if d.Action != tc.action || d.Reason != tc.reason || d.Delay != tc.delay {
				t.Fatalf("Decide = %+v, want action %s reason %s delay %s", d, tc.action, tc.reason, tc.delay)
			}
			if !strings.Contains(d.Message, tc.msg) {
				t.Errorf("message %q lacks %q", d.Message, tc.msg)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	p := RetryPolicy{Jitter: func() float64 { return 0.999 }}
	for n, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second, 6: 60 * time.Second, 20: 60 * time.Second} {
		got := p.Backoff(n, 0)
		if got < want || got > want+want/4 || got > DefaultRetryMax {
			t.Errorf("Backoff(%d) = %s, want in [%s, %s] and at most 60 s", n, got, want, want+want/4)
		}
	}
	if got := p.Backoff(1, 2*time.Minute); got != DefaultRetryMax {
		t.Errorf("a long Retry-After is capped: %s", got)
	}
}
