package compact

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

func TestClassifyFailure(t *testing.T) {
	pe := func(r llm.Reason, status int) error {
		return fmt.Errorf("summarise: %w", &llm.ProviderError{Provider: "p", Reason: r, Status: status, Message: "x"})
	}
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{ErrNothingToCompact, FailureNothingToCompact},
		{context.Canceled, FailureAborted},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), FailureTimeout},
		{pe(llm.ReasonTimeout, 0), FailureTimeout},
		{pe(llm.ReasonContextOverflow, 400), FailureContextOverflow},
		{pe(llm.ReasonRateLimit, 429), FailureRateLimit},
		{pe(llm.ReasonAuth, 401), FailureAuth},
		{pe(llm.ReasonBilling, 402), FailureAuth},
		{pe(llm.ReasonServer, 502), FailureProvider5xx},
		{pe(llm.ReasonOverloaded, 0), FailureProvider5xx},
		{pe(llm.ReasonFormat, 400), FailureProvider4xx},
		{pe(llm.ReasonUnknown, 0), FailureSummary},
		{&SummaryError{Attempts: 3, Err: pe(llm.ReasonServer, 500)}, FailureProvider5xx},
		{errors.New("request timed out"), FailureTimeout},
		{errors.New("502 bad gateway"), FailureProvider5xx},
		{errors.New("summary generation failed"), FailureSummary},
		{errors.New("operation was aborted"), FailureAborted},
		{errors.New("prompt is too long"), FailureContextOverflow},
		{errors.New("rate limit reached"), FailureRateLimit},
		{errors.New("HTTP 404"), FailureProvider4xx},
		{errors.New("no real conversation messages"), FailureNothingToCompact},
		{errors.New("something else"), FailureUnknown},
	}
	for _, tt := range tests {
		if got := ClassifyFailure(tt.err); got != tt.want {
			t.Errorf("ClassifyFailure(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestWindowErrorText(t *testing.T) {
	for _, w := range []int{0, 8_000} {
		_, err := CheckWindow(w)
		var we *WindowError
		if !errors.As(err, &we) || we.Window != w || !strings.Contains(err.Error(), "16000") {
			t.Errorf("window %d: %v", w, err)
		}
	}
}

// streamModel answers every call with the events of fn.
type streamModel func(yield func(llm.Event, error) bool)

func (f streamModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return iter.Seq2[llm.Event, error](f)
}

func TestSummarizerStreamFailures(t *testing.T) {
	refused := &llm.ProviderError{Provider: "p", Reason: llm.ReasonAuth, Status: 401, Message: "bad key"}
	tests := []struct {
		name  string
		model streamModel
		want  string
	}{
		{"refused before the first event", func(y func(llm.Event, error) bool) { y(llm.Event{}, refused) }, "bad key"},
		{"error event without cause", func(y func(llm.Event, error) bool) {
			y(llm.Event{Type: llm.EventError, Message: &llm.Message{ErrorMessage: "upstream said no"}}, nil)
		}, "upstream said no"},
		{"no done event", func(y func(llm.Event, error) bool) { y(llm.Event{Type: llm.EventStart}, nil) }, "without a reply"},
		{"empty summary", func(y func(llm.Event, error) bool) {
			y(llm.Event{Type: llm.EventDone, Message: &llm.Message{Role: llm.RoleAssistant}}, nil)
		}, "empty summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Summarizer{Model: tt.model, Window: 32_000, Attempts: 1}
			_, err := s.Summarize(context.Background(), []llm.Message{user("hi")}, "")
			var se *SummaryError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want a SummaryError saying %q", err, tt.want)
			}
		})
	}
	if _, err := (&Summarizer{}).Summarize(context.Background(), nil, ""); err == nil {
		t.Error("a Summarizer without a model must fail")
	}
}

func TestTransformOverBudgetIsReported(t *testing.T) {
	// One user prompt bigger than the budget: nothing can be removed, so
	// the call goes ahead and the event says so.
	h := newHarness(t, Config{}, &fakeModel{})
	msgs := []llm.Message{user(rep("x", 60_000))}
	out, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil || len(out) != 1 {
		t.Fatalf("out %d, err %v", len(out), err)
	}
	if got := h.types(); len(got) != 1 || got[0] != EventOverBudget {
		t.Errorf("events %v", got)
	}
}

func TestTransformCompactsThenTruncates(t *testing.T) {
	// The newest message is a result too big to keep whole beside the
	// system prompt: the summary keeps it with its call, then it is
	// shortened.
	h := newHarness(t, Config{SystemPrompt: rep("s", 4_000), DisableMicrocompact: true}, &fakeModel{})
	msgs := conversation(20, 300)
	msgs = append(msgs, user("read it"), assistant("", call("big", "read", `{}`)),
		result("big", "read", rep("data line\n", 3_800)))
	out, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	h.fits(t, out)
	if len(h.rec.compactions) != 1 || len(h.rec.truncations) == 0 {
		t.Errorf("compactions %d truncations %d", len(h.rec.compactions), len(h.rec.truncations))
	}
}

func TestTransformPrunesAfterCompaction(t *testing.T) {
	// The recent history is two huge messages: after the summary it is
	// still over budget, with no tool result to shorten, so pruning
	// drops the older one.
	h := newHarness(t, Config{}, &fakeModel{})
	msgs := append(conversation(20, 300), assistant(rep("a", 28_000)), user(rep("u", 16_000)))
	out, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if msg := checkPairing(out); msg != "" {
		t.Error(msg)
	}
	if len(h.rec.compactions) != 2 || h.rec.compactions[0].Fallback || !h.rec.compactions[1].Fallback {
		t.Fatalf("records %+v", h.rec.compactions)
	}
	if h.rec.compactions[1].FirstKeptIndex <= h.rec.compactions[0].FirstKeptIndex {
		t.Error("pruning did not move the kept history forward")
	}
	if len(h.before) != 2 || len(h.after) != 2 {
		t.Errorf("hooks %d/%d, want 2/2", len(h.before), len(h.after))
	}
	if !strings.Contains(out[0].Text(), "## Goal") || !strings.Contains(out[0].Text(), "dropped without a summary") {
		t.Errorf("the summary should keep the summary and note the pruning: %.300q", out[0].Text())
	}
}

func TestSetRequestCounts(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{})
	msgs := conversation(10, 300) // 6,000 tokens
	if _, err := h.c.TransformContext(context.Background(), msgs); err != nil || len(h.rec.compactions) != 0 {
		t.Fatalf("compacted without need: %v", err)
	}
	h.c.SetRequest(rep("s", 30_000), []llm.ToolSpec{{Name: "read", Description: "Read."}})
	if _, err := h.c.TransformContext(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if len(h.rec.compactions) != 1 {
		t.Error("a larger system prompt did not count against the budget")
	}
}
