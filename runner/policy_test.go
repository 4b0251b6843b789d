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
	fail := func(r llm.Reason) attemptOutcome {
		return attemptOutcome{End: "error", Failure: r, Err: errors.New(string(r))}
	}
	tests := []struct {
		name   string
		o      attemptOutcome
		s      cascadeState
		action cascadeAction
		reason string
		delay  time.Duration
		msg    string
	}{
		{"success finishes", attemptOutcome{End: "stop"}, cascadeState{}, actFinish, "stop", 0, ""},
		{"max turns finishes", attemptOutcome{End: "max_turns"}, cascadeState{}, actFinish, "max_turns", 0, ""},
		{"abort finishes", attemptOutcome{End: "aborted"}, cascadeState{}, actFinish, "aborted", 0, ""},
		{"overflow compacts first", fail(llm.ReasonContextOverflow), cascadeState{}, actCompact, "context_overflow", 0, "(1/3)"},
		{"overflow compacts a third time", fail(llm.ReasonContextOverflow), cascadeState{OverflowCompactions: 2}, actCompact, "context_overflow", 0, "(3/3)"},
		{"overflow after the attempt's compaction retries without compacting",
			attemptOutcome{End: "error", Failure: llm.ReasonContextOverflow, Compacted: true}, cascadeState{OverflowCompactions: 1}, actOverflowRetry, "context_overflow", 0, "(2/3)"},
		{"overflow after three compactions truncates", fail(llm.ReasonContextOverflow), cascadeState{OverflowCompactions: 3}, actTruncate, "context_overflow", 0, "shortening"},
		{"overflow after the attempt compacted and all tries used truncates",
			attemptOutcome{End: "error", Failure: llm.ReasonContextOverflow, Compacted: true}, cascadeState{OverflowCompactions: 3}, actTruncate, "context_overflow", 0, ""},
		{"overflow after truncation fails for the user", fail(llm.ReasonContextOverflow), cascadeState{OverflowCompactions: 3, TruncationTried: true}, actFail, "context_overflow", 0, "new session"},
		{"timeout with a big prompt compacts", attemptOutcome{End: "error", Failure: llm.ReasonTimeout, PromptTokens: 70_000}, cascadeState{Window: 100_000}, actTimeoutCompact, "timeout", 0, "compacting"},
		{"timeout at exactly 65% retries", attemptOutcome{End: "error", Failure: llm.ReasonTimeout, PromptTokens: 65_000}, cascadeState{Window: 100_000}, actRetry, "timeout", 2 * time.Second, ""},
		{"timeout compactions are capped at 2", attemptOutcome{End: "error", Failure: llm.ReasonTimeout, PromptTokens: 90_000}, cascadeState{Window: 100_000, TimeoutCompactions: 2}, actRetry, "timeout", 2 * time.Second, ""},
		{"overloaded retries after 2 s", fail(llm.ReasonOverloaded), cascadeState{}, actRetry, "overloaded", 2 * time.Second, "(1/3)"},
		{"second retry waits 4 s", fail(llm.ReasonServer), cascadeState{Retries: 1}, actRetry, "server", 4 * time.Second, "(2/3)"},
		{"network retries", fail(llm.ReasonNetwork), cascadeState{Retries: 2}, actRetry, "network", 8 * time.Second, "(3/3)"},
		{"retries are capped", fail(llm.ReasonOverloaded), cascadeState{Retries: 3}, actFail, "overloaded", 0, "gave up after 3"},
		{"rate limit honours Retry-After", attemptOutcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: 7 * time.Second}, cascadeState{}, actRetry, "rate_limit", 7 * time.Second, ""},
		{"a short Retry-After does not shorten the backoff", attemptOutcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: time.Second}, cascadeState{Retries: 1}, actRetry, "rate_limit", 4 * time.Second, ""},
		{"Retry-After of 60 s is waited", attemptOutcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: 60 * time.Second}, cascadeState{}, actRetry, "rate_limit", 60 * time.Second, ""},
		{"Retry-After over 60 s fails", attemptOutcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: 90 * time.Second}, cascadeState{}, actFail, "rate_limit", 0, "asked to wait 1m30s"},
		{"auth is not retried", fail(llm.ReasonAuth), cascadeState{}, actFail, "auth", 0, llm.ReasonAuth.UserMessage()},
		{"auth with a profile left rotates", fail(llm.ReasonAuth), cascadeState{ProfilesLeft: 1}, actRotateProfile, "auth", 0, "next auth profile"},
		{"billing with a profile left rotates", fail(llm.ReasonBilling), cascadeState{ProfilesLeft: 2}, actRotateProfile, "billing", 0, ""},
		{"rate limit with a profile left rotates at once", fail(llm.ReasonRateLimit), cascadeState{ProfilesLeft: 1}, actRotateProfile, "rate_limit", 0, ""},
		{"overloaded retries the same profile", fail(llm.ReasonOverloaded), cascadeState{ProfilesLeft: 1}, actRetry, "overloaded", 2 * time.Second, ""},
		{"overflow never rotates", fail(llm.ReasonContextOverflow), cascadeState{ProfilesLeft: 1}, actCompact, "context_overflow", 0, ""},
		{"overflow never falls back", fail(llm.ReasonContextOverflow), cascadeState{OverflowCompactions: 3, TruncationTried: true, FallbacksLeft: 1}, actFail, "context_overflow", 0, ""},
		{"retries exhausted fall back", fail(llm.ReasonOverloaded), cascadeState{Retries: 3, FallbacksLeft: 1}, actFallbackModel, "overloaded", 0, "after 3 retries"},
		{"retries come before the fallback", fail(llm.ReasonOverloaded), cascadeState{Retries: 2, FallbacksLeft: 1}, actRetry, "overloaded", 8 * time.Second, ""},
		{"auth on the last profile falls back", fail(llm.ReasonAuth), cascadeState{FallbacksLeft: 1}, actFallbackModel, "auth", 0, ""},
		{"profiles come before the fallback", fail(llm.ReasonAuth), cascadeState{ProfilesLeft: 1, FallbacksLeft: 1}, actRotateProfile, "auth", 0, ""},
		{"unknown model falls back", fail(llm.ReasonModelNotFound), cascadeState{FallbacksLeft: 2}, actFallbackModel, "model_not_found", 0, ""},
		{"a long Retry-After falls back", attemptOutcome{End: "error", Failure: llm.ReasonRateLimit, RetryAfter: 5 * time.Minute}, cascadeState{FallbacksLeft: 1}, actFallbackModel, "rate_limit", 0, ""},
		{"format falls back when a model is left (failover.Next)", fail(llm.ReasonFormat), cascadeState{FallbacksLeft: 1}, actFallbackModel, "format", 0, ""},
		{"a refused thinking level is lowered", attemptOutcome{End: "error", Failure: llm.ReasonFormat, Message: `thinking level "high" is not supported; supported values are: "low"`},
			cascadeState{AttemptedThinking: []llm.ThinkingLevel{llm.ThinkingHigh}}, actThinkingFallback, "format", 0, "thinking low"},
		{"billing is not retried", fail(llm.ReasonBilling), cascadeState{}, actFail, "billing", 0, llm.ReasonBilling.UserMessage()},
		{"format is not retried", fail(llm.ReasonFormat), cascadeState{}, actFail, "format", 0, ""},
		{"billing names the provider and the model",
			attemptOutcome{End: "error", Failure: llm.ReasonBilling, Err: llm.NewHTTPError("openrouter", "anthropic/claude-opus-4", 402, nil, []byte(`{"error":{"message":"Insufficient credits","code":402}}`))},
			cascadeState{}, actFail, "billing", 0, "openrouter refused the request for anthropic/claude-opus-4 for billing reasons"},
		{"a failed OAuth refresh is not a bad key",
			attemptOutcome{End: "error", Failure: llm.ReasonAuth, Err: llm.NewStreamError("openai-codex", "gpt-5-codex", "OAuth token refresh failed: invalid_grant")},
			cascadeState{}, actFail, "auth", 0, "Sign in again"},
		{"unclassified error fails as unknown", attemptOutcome{End: "error"}, cascadeState{}, actFail, "unknown", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.o, tc.s, noJitter)
			if d.Action != tc.action || d.Reason != tc.reason || d.Delay != tc.delay {
				t.Fatalf("decide = %+v, want action %s reason %s delay %s", d, tc.action, tc.reason, tc.delay)
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
