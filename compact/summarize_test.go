package compact

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/llm"
)

func TestSummarizerRetries(t *testing.T) {
	boom := &llm.ProviderError{Provider: "p", Reason: llm.ReasonOverloaded, Status: 529, Message: "overloaded"}
	auth := &llm.ProviderError{Provider: "p", Reason: llm.ReasonAuth, Status: 401, Message: "bad key"}
	tests := []struct {
		name      string
		model     *fakeModel
		attempts  int
		wantCalls int
		wantSleep []time.Duration
		wantErr   error
	}{
		{"succeeds first time", &fakeModel{}, 0, 1, nil, nil},
		{"fails twice then succeeds", &fakeModel{fail: 2, err: boom}, 0, 3,
			[]time.Duration{500 * time.Millisecond, time.Second}, nil},
		{"always fails: three tries", &fakeModel{always: true, err: boom}, 0, 3,
			[]time.Duration{500 * time.Millisecond, time.Second}, boom},
		{"backoff caps at 5s", &fakeModel{always: true, err: boom}, 6, 6,
			[]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}, boom},
		{"no retry on auth", &fakeModel{always: true, err: auth}, 0, 1, nil, auth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sl sleeps
			s := &Summarizer{Model: tt.model, Window: 32_000, Attempts: tt.attempts, Sleep: sl.sleep, Jitter: half}
			sum, err := s.Summarize(context.Background(), []llm.Message{user("hello"), assistant("hi")}, "")
			if tt.model.count() != tt.wantCalls {
				t.Errorf("%d calls, want %d", tt.model.count(), tt.wantCalls)
			}
			if !slices.Equal(sl.d, tt.wantSleep) {
				t.Errorf("sleeps %v, want %v", sl.d, tt.wantSleep)
			}
			if tt.wantErr == nil {
				if err != nil || !strings.Contains(sum, "## Goal") {
					t.Fatalf("summary %q, err %v", sum, err)
				}
				return
			}
			var se *SummaryError
			if !errors.As(err, &se) || se.Attempts != tt.wantCalls || !errors.Is(err, tt.wantErr) {
				t.Errorf("err %v, want a SummaryError after %d attempts wrapping %v", err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

func TestSummarizerAbort(t *testing.T) {
	m := &fakeModel{block: true}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	s := &Summarizer{Model: m, Window: 32_000, Sleep: (&sleeps{}).sleep}
	go func() {
		_, err := s.Summarize(ctx, []llm.Message{user("hello")}, "")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if m.count() != 1 {
		t.Errorf("%d calls: an abort must not be retried", m.count())
	}
}

func TestSummarizerDefaultSleepUsesTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeModel{fail: 1, err: errors.New("flaky")}
		s := &Summarizer{Model: m, Window: 32_000, Jitter: half}
		start := time.Now()
		if _, err := s.Summarize(t.Context(), []llm.Message{user("hello")}, ""); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 500*time.Millisecond {
			t.Errorf("waited %v, want 500ms", waited)
		}
	})
}

func TestSummarizerRequest(t *testing.T) {
	m := &fakeModel{}
	s := &Summarizer{Model: m, Window: 32_000, Instructions: Instructions{Focus: "Track the release blockers."},
		Options: llm.Options{MaxTokens: 1234, ToolChoice: "required"}}
	msgs := []llm.Message{user("fix the bug in parser.go"),
		assistant("looking", call("c1", "read", `{"path":"parser.go"}`)),
		result("c1", "read", "package parser")}
	if _, err := s.Summarize(context.Background(), msgs, "## Goal\nold summary"); err != nil {
		t.Fatal(err)
	}
	req := m.reqs[0]
	if len(req.Tools) != 0 || req.Options.ToolChoice != "" || req.Options.MaxTokens != 1234 || req.SystemPrompt == "" {
		t.Errorf("request: tools %v, options %+v, system %q", req.Tools, req.Options, req.SystemPrompt)
	}
	p := m.lastPrompt()
	for _, want := range []string{"<conversation>", "[User]: fix the bug in parser.go", `read({"path":"parser.go"})`,
		"[Tool result]: package parser", "<previous-summary>", "old summary", "## Goal", "## Constraints & Preferences",
		"## Progress", "### Done", "### In Progress", "### Blocked", "## Key Decisions", "## Next Steps",
		"## Critical Context", "Additional focus:\nTrack the release blockers.", "UUIDs"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
}

func TestSummarizerStagesAndOmissions(t *testing.T) {
	m := &fakeModel{}
	s := &Summarizer{Model: m, Window: 16_000}
	var msgs []llm.Message
	for range 12 {
		msgs = append(msgs, user(rep("question ", 400)), assistant(rep("answer ", 600)))
	}
	huge := rep("z", 40_000) // 10,000 tokens: over half of 16,000
	msgs = append(msgs, user(huge))
	if _, err := s.Summarize(context.Background(), msgs, ""); err != nil {
		t.Fatal(err)
	}
	if m.count() < 3 {
		t.Fatalf("%d calls: want parts and a merge", m.count())
	}
	all := ""
	for _, r := range m.reqs {
		all += r.Messages[0].Text()
	}
	if strings.Contains(all, huge) || !strings.Contains(all, "left out of the summary") {
		t.Error("the oversized message was not replaced by an omission note")
	}
	if last := m.lastPrompt(); !strings.Contains(last, "<part-summary") || !strings.Contains(last, "Merge") {
		t.Errorf("last call is not the merge: %.200q", last)
	}
}

func TestFileOps(t *testing.T) {
	msgs := []llm.Message{
		assistant("", call("1", "read", `{"path":"a.go"}`), call("2", "edit", `{"path":"b.go"}`),
			call("3", "read", `{"path":"b.go"}`), call("4", "write", `{"file_path":"c.go"}`), call("5", "bash", `{"command":"ls"}`),
			call("6", "read", `not json`)),
	}
	got := FileOps(msgs, FileLists{Read: []string{"old.go"}, Modified: []string{"z.go"}})
	if !slices.Equal(got.Read, []string{"a.go", "old.go"}) || !slices.Equal(got.Modified, []string{"b.go", "c.go", "z.go"}) {
		t.Errorf("got %+v", got)
	}
	s := withFiles("sum", got)
	if !strings.Contains(s, "<read-files>\na.go\nold.go\n</read-files>") || !strings.Contains(s, "<modified-files>") {
		t.Errorf("file lists: %q", s)
	}
	if StripFiles(s) != "sum" {
		t.Errorf("stripFiles = %q", StripFiles(s))
	}
}
