package failover

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name string
		in   input
		want decision
	}{
		{"retry limit without fallback", input{Stage: stageRetryLimit, Reason: llm.ReasonRateLimit},
			decision{Action: actReturnErrorPayload}},
		{"retry limit timeout", input{Stage: stageRetryLimit, FallbackConfigured: true, Reason: llm.ReasonTimeout},
			decision{Action: actReturnErrorPayload}},
		{"retry limit no reason", input{Stage: stageRetryLimit, FallbackConfigured: true},
			decision{Action: actReturnErrorPayload}},
		{"retry limit overloaded", input{Stage: stageRetryLimit, FallbackConfigured: true, Reason: llm.ReasonOverloaded},
			decision{Action: actFallbackModel, Reason: llm.ReasonOverloaded}},
		{"prompt timeout does not rotate", input{Stage: stagePrompt, FailoverFailure: true, FallbackConfigured: true, Reason: llm.ReasonTimeout},
			decision{Action: actFallbackModel, Reason: llm.ReasonTimeout}},
		{"prompt unclassified failover text falls back as unknown", input{Stage: stagePrompt, FailoverFailure: true, FallbackConfigured: true, ProfileRotated: true},
			decision{Action: actFallbackModel, Reason: llm.ReasonUnknown}},
		{"prompt exhausted without fallback", input{Stage: stagePrompt, FailoverFailure: true, Reason: llm.ReasonAuth, ProfileRotated: true},
			decision{Action: actSurfaceError, Reason: llm.ReasonAuth}},
		{"assistant no failure", input{Stage: stageAssistant, FallbackConfigured: true},
			decision{Action: actContinueNormal}},
		{"assistant timeout rotates", input{Stage: stageAssistant, TimedOut: true, Aborted: true},
			decision{Action: actRotateProfile}},
		{"assistant timeout falls back as timeout", input{Stage: stageAssistant, TimedOut: true, Aborted: true, ProfileRotated: true, FallbackConfigured: true},
			decision{Action: actFallbackModel, Reason: llm.ReasonTimeout}},
		{"assistant timeout during compaction", input{Stage: stageAssistant, TimedOut: true, TimedOutDuringCompaction: true, Aborted: true},
			decision{Action: actContinueNormal}},
		{"assistant exhausted without fallback", input{Stage: stageAssistant, Reason: llm.ReasonBilling, ProfileRotated: true},
			decision{Action: actSurfaceError, Reason: llm.ReasonBilling}},
		{"assistant external abort", input{Stage: stageAssistant, ExternalAbort: true, Aborted: true, Reason: llm.ReasonRateLimit},
			decision{Action: actSurfaceError, Reason: llm.ReasonRateLimit}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.in); got != tt.want {
				t.Errorf("decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMaxIterations(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 32}, {1, 32}, {2, 40}, {5, 64}, {17, 160}, {100, 160}} {
		if got := MaxIterations(c.n); got != c.want {
			t.Errorf("MaxIterations(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestPickFallbackThinkingLevel(t *testing.T) {
	tests := []struct {
		msg       string
		attempted []llm.ThinkingLevel
		want      llm.ThinkingLevel // "" = none
	}{
		{`Supported values are: "high", "medium"`, []llm.ThinkingLevel{llm.ThinkingHigh}, llm.ThinkingMedium},
		{`reasoning_effort must be one of 'low', 'medium', 'high'`, []llm.ThinkingLevel{llm.ThinkingMinimal}, llm.ThinkingLow},
		{`Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. Supported values are: 'low', 'medium', and 'high'.`, []llm.ThinkingLevel{llm.ThinkingMinimal}, llm.ThinkingLow},
		{`thinking is not supported by this model`, nil, llm.ThinkingOff},
		{`This model requires reasoning`, []llm.ThinkingLevel{llm.ThinkingOff}, llm.ThinkingMinimal},
		{`invalid api key`, nil, ""},
		{`image input is not supported`, []llm.ThinkingLevel{""}, ""},
		{`image input is not supported`, []llm.ThinkingLevel{llm.ThinkingHigh}, llm.ThinkingOff},
		{`Supported values are: 'none' and "max". Use high for more.`, nil, llm.ThinkingHigh},
		{"Supported values: low, medium\nhigh is not", []llm.ThinkingLevel{llm.ThinkingLow}, llm.ThinkingMedium},
		{"   ", nil, ""},
	}
	for _, tt := range tests {
		got, ok := PickFallbackThinkingLevel(tt.msg, tt.attempted)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("PickFallbackThinkingLevel(%q, %v) = %q %v, want %q", tt.msg, tt.attempted, got, ok, tt.want)
		}
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		name     string
		f        Failure
		s        State
		want     Step
		mark     bool
		thinking llm.ThinkingLevel
	}{
		{"overflow never fails over", Failure{Reason: llm.ReasonContextOverflow}, State{FallbackConfigured: true, ProfilesLeft: 2}, StepNone, false, ""},
		{"external abort", Failure{Reason: llm.ReasonRateLimit, ExternalAbort: true}, State{FallbackConfigured: true, ProfilesLeft: 1}, StepSurface, false, ""},
		{"auth refresh first", Failure{Reason: llm.ReasonAuth}, State{CanRefreshAuth: true, ProfilesLeft: 1}, StepRefreshAuth, false, ""},
		{"auth after refresh rotates", Failure{Reason: llm.ReasonAuth}, State{CanRefreshAuth: true, AuthRefreshed: true, ProfilesLeft: 1}, StepRotateProfile, true, ""},
		{"auth without refresh rotates", Failure{Reason: llm.ReasonAuth}, State{ProfilesLeft: 1}, StepRotateProfile, true, ""},
		{"auth exhausted falls back", Failure{Reason: llm.ReasonAuth}, State{FallbackConfigured: true}, StepFallbackModel, true, ""},
		{"auth exhausted no fallback", Failure{Reason: llm.ReasonAuth}, State{}, StepSurface, true, ""},
		{"billing rotates", Failure{Reason: llm.ReasonBilling}, State{ProfilesLeft: 1, FallbackConfigured: true}, StepRotateProfile, true, ""},
		{"rate limit with two profiles rotates at once", Failure{Reason: llm.ReasonRateLimit, RetryAfter: 5 * time.Second}, State{ProfilesLeft: 1}, StepRotateProfile, true, ""},
		{"rate limit with one profile waits", Failure{Reason: llm.ReasonRateLimit, RetryAfter: 5 * time.Second}, State{FallbackConfigured: true}, StepRetry, true, ""},
		{"rate limit with one profile, long Retry-After, falls back", Failure{Reason: llm.ReasonRateLimit, RetryAfter: 90 * time.Second}, State{FallbackConfigured: true}, StepFallbackModel, true, ""},
		{"rate limit with one profile, long Retry-After, no fallback", Failure{Reason: llm.ReasonRateLimit, RetryAfter: 90 * time.Second}, State{}, StepSurface, true, ""},
		{"second rate limit escalates to the fallback", Failure{Reason: llm.ReasonRateLimit}, State{ProfilesLeft: 1, RateLimitRotations: 1, FallbackConfigured: true}, StepFallbackModel, true, ""},
		{"second rate limit without fallback keeps rotating", Failure{Reason: llm.ReasonRateLimit}, State{ProfilesLeft: 1, RateLimitRotations: 1}, StepRotateProfile, true, ""},
		{"overloaded retries the same model", Failure{Reason: llm.ReasonOverloaded}, State{ProfilesLeft: 1, FallbackConfigured: true}, StepRetry, true, ""},
		{"overloaded, long Retry-After, rotates", Failure{Reason: llm.ReasonOverloaded, RetryAfter: 2 * time.Minute}, State{ProfilesLeft: 1}, StepRotateProfile, true, ""},
		{"overloaded, retries used, falls back", Failure{Reason: llm.ReasonOverloaded}, State{RetriesExhausted: true, FallbackConfigured: true}, StepFallbackModel, true, ""},
		{"overloaded again after rotating falls back", Failure{Reason: llm.ReasonOverloaded}, State{RetriesExhausted: true, ProfilesLeft: 1, OverloadRotations: 1, FallbackConfigured: true}, StepFallbackModel, true, ""},
		{"timeout never marks", Failure{Reason: llm.ReasonTimeout}, State{ProfilesLeft: 1}, StepRetry, false, ""},
		{"timeout retries used rotates without marking", Failure{Reason: llm.ReasonTimeout}, State{ProfilesLeft: 1, RetriesExhausted: true}, StepRotateProfile, false, ""},
		{"network retries used, no fallback", Failure{Reason: llm.ReasonNetwork}, State{RetriesExhausted: true}, StepSurface, false, ""},
		{"unsupported thinking level lowers it", Failure{Reason: llm.ReasonFormat, Message: `400 think value "low" is not supported for this model`},
			State{ProfilesLeft: 1, FallbackConfigured: true, AttemptedThinking: []llm.ThinkingLevel{llm.ThinkingLow}}, StepLowerThinking, false, llm.ThinkingOff},
		{"unsupported thinking after off falls back", Failure{Reason: llm.ReasonFormat, Message: `400 think value "low" is not supported for this model`},
			State{FallbackConfigured: true, AttemptedThinking: []llm.ThinkingLevel{llm.ThinkingLow, llm.ThinkingOff}}, StepFallbackModel, false, ""},
		{"format does not rotate", Failure{Reason: llm.ReasonFormat, Message: "bad request"}, State{ProfilesLeft: 3}, StepSurface, false, ""},
		{"model not found on this key rotates", Failure{Reason: llm.ReasonModelNotFound}, State{ProfilesLeft: 1}, StepRotateProfile, true, ""},
		{"unknown falls back", Failure{}, State{FallbackConfigured: true}, StepFallbackModel, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Next(tt.f, tt.s)
			if p.Step != tt.want || p.Mark != tt.mark || p.Thinking != tt.thinking {
				t.Errorf("Next = %+v, want step %s mark %v thinking %q", p, tt.want, tt.mark, tt.thinking)
			}
			if p.Message == "" {
				t.Error("plan without a message")
			}
		})
	}
}

func TestFailureOf(t *testing.T) {
	pe := &llm.ProviderError{Provider: "p", Reason: llm.ReasonRateLimit, RetryAfter: 3 * time.Second, Message: "slow down"}
	f := FailureOf(fmt.Errorf("attempt: %w", pe))
	if f.Reason != llm.ReasonRateLimit || f.RetryAfter != 3*time.Second || f.Message != "slow down" || f.ExternalAbort {
		t.Errorf("FailureOf(provider error) = %+v", f)
	}
	if f := FailureOf(fmt.Errorf("run: %w", errContextCanceled())); !f.ExternalAbort {
		t.Errorf("FailureOf(cancel) = %+v, want an external abort", f)
	}
}

func TestFailoverError(t *testing.T) {
	pe := &llm.ProviderError{Provider: "anthropic", Model: "m", Status: 401, Reason: llm.ReasonAuth, Message: "invalid x-api-key"}
	fe := NewFailoverError("anthropic/m", "", pe)
	if fe.Reason != llm.ReasonAuth || fe.Status != 401 || !errors.Is(fe, pe) {
		t.Errorf("NewFailoverError = %+v", fe)
	}
	fe.To = "openai/gpt"
	if s := fe.Error(); !strings.Contains(s, "anthropic/m") || !strings.Contains(s, "openai/gpt") || !strings.Contains(s, "auth") {
		t.Errorf("Error() = %q", s)
	}
	var got *FailoverError
	if !errors.As(fmt.Errorf("run: %w", fe), &got) || got != fe {
		t.Error("errors.As does not find the *FailoverError")
	}
	fe = NewFailoverError("x/y", llm.ReasonBilling, errors.New("out of credits"))
	if fe.Status != http.StatusPaymentRequired {
		t.Errorf("status = %d, want 402", fe.Status)
	}
	for r, want := range map[llm.Reason]int{llm.ReasonOverloaded: 503, llm.ReasonAuthPermanent: 403, ReasonSessionExpired: 410, llm.ReasonServer: 0} {
		if got := Status(r); got != want {
			t.Errorf("Status(%s) = %d, want %d", r, got, want)
		}
	}
}

func TestGate(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		g    Gate
		want bool
	}{
		{"auth skips the provider", Gate{Reason: llm.ReasonAuth, Primary: true, Now: now, SoonestExpiry: now}, false},
		{"billing primary alone probes", Gate{Reason: llm.ReasonBilling, Primary: true, Now: now, SoonestExpiry: now.Add(time.Hour)}, true},
		{"billing with fallbacks skips", Gate{Reason: llm.ReasonBilling, Primary: true, HasFallbacks: true, Now: now, SoonestExpiry: now.Add(time.Hour)}, false},
		{"rate limit primary near expiry probes", Gate{Reason: llm.ReasonRateLimit, Primary: true, Now: now, SoonestExpiry: now.Add(time.Minute)}, true},
		{"rate limit primary far from expiry skips", Gate{Reason: llm.ReasonRateLimit, Primary: true, Now: now, SoonestExpiry: now.Add(5 * time.Minute)}, false},
		{"probe too soon after the last", Gate{Reason: llm.ReasonRateLimit, Primary: true, Now: now, SoonestExpiry: now, LastProbe: now.Add(-10 * time.Second)}, false},
		{"non-primary skips", Gate{Reason: llm.ReasonOverloaded, Now: now, SoonestExpiry: now}, false},
	}
	for _, tt := range tests {
		if try, why := GateCandidate(tt.g); try != tt.want || why == "" {
			t.Errorf("%s: GateCandidate = %v %q, want %v", tt.name, try, why, tt.want)
		}
	}
}

func errContextCanceled() error { return contextCanceled }
