package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
)

func TestStatusLineFormat(t *testing.T) {
	tests := []struct {
		frame   int
		what    string
		elapsed time.Duration
		tokens  int
		width   int
		want    string
	}{
		{0, "waiting for the model", 0, 0, 120, "⠋ waiting for the model · 0s"},
		{1, "waiting for the model", 3900 * time.Millisecond, 0, 120, "⠙ waiting for the model · 3s"},
		{2, "thinking", 12 * time.Second, 340, 120, "⠹ thinking · 12s · ↓ 340 tokens"},
		{10, "thinking", 125 * time.Second, 12_345, 120, "⠋ thinking · 2m05s · ↓ 12.3k tokens"},
		{3, "running bash", time.Second, 0, 120, "⠸ running bash · 1s"},
		// Cut to one column less than the terminal: a wrapped line could
		// not be erased with \r.
		{0, "running a_tool_with_a_long_name", 61 * time.Second, 0, 20, "⠋ running a_tool_w…"},
	}
	for _, tt := range tests {
		got := statusLine(tt.frame, tt.what, tt.elapsed, tt.tokens, tt.width)
		if got != tt.want {
			t.Errorf("statusLine(%d, %q, %v, %d, %d) = %q, want %q", tt.frame, tt.what, tt.elapsed, tt.tokens, tt.width, got, tt.want)
		}
		if n := len([]rune(got)); n > tt.width-1 {
			t.Errorf("%q is %d columns, wider than %d-1", got, n, tt.width)
		}
	}
}

// fakeStatus is a status on a recorded terminal with a clock the test moves.
type fakeStatus struct {
	*status
	term strings.Builder
	at   time.Time
	err  io.Writer // the guarded stderr
	out  io.Writer // the guarded stdout
}

func newFakeStatus() *fakeStatus {
	f := &fakeStatus{at: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	f.status = newStatus(&f.term, func() time.Time { return f.at }, func() int { return 100 })
	f.err, f.out = f.guard(&f.term), f.guard(&f.term)
	return f
}

// step moves the clock by d, ticks, and returns what reached the terminal
// since the last step.
func (f *fakeStatus) step(d time.Duration) string {
	before := f.term.Len()
	f.at = f.at.Add(d)
	f.tick()
	return f.term.String()[before:]
}

func agentEv(e agent.Event) runner.Event { return runner.Event{Type: e.Type, Agent: &e} }

func llmDelta(typ llm.EventType, s string) runner.Event {
	return agentEv(agent.Event{Type: agent.EventMessageUpdate, LLM: &llm.Event{Type: typ, Delta: s}})
}

var assistantEnd = agentEv(agent.Event{Type: agent.EventMessageEnd, Message: &llm.Message{Role: llm.RoleAssistant}})

func TestStatusWaitingForTheModel(t *testing.T) {
	f := newFakeStatus()
	if got := f.step(time.Second); got != "" {
		t.Fatalf("before the run: %q on the terminal", got)
	}
	f.event(agentEv(agent.Event{Type: agent.EventTurnStart}))
	if got := f.term.String(); got != "\r⠙ waiting for the model · 0s\x1b[K" {
		t.Fatalf("at turn start: %q", got)
	}
	if got, want := f.step(2500*time.Millisecond), "\r⠹ waiting for the model · 2s\x1b[K"; got != want {
		t.Fatalf("2.5s later: %q, want %q", got, want)
	}
	// Thinking streams: the line counts its tokens (4 characters each
	// until the provider reports usage).
	f.event(llmDelta(llm.EventThinkingDelta, strings.Repeat("x", 40)))
	if got, want := f.step(time.Second), "\r⠸ thinking · 3s · ↓ 10 tokens\x1b[K"; got != want {
		t.Fatalf("thinking: %q, want %q", got, want)
	}
	// Text arrives: the line is erased before it, and does not come back
	// over a half-written line.
	before := f.term.Len()
	f.event(llmDelta(llm.EventTextDelta, "Hello"))
	io.WriteString(f.out, "Hello")
	if got := f.term.String()[before:]; got != "\r\x1b[KHello" {
		t.Fatalf("text: %q, want the line erased, then the text", got)
	}
	for range 30 {
		if got := f.step(100 * time.Millisecond); got != "" {
			t.Fatalf("over a half-written line: %q", got)
		}
	}
	io.WriteString(f.out, " world\n")
	f.event(assistantEnd)
	if got := f.step(2 * time.Second); got != "" {
		t.Fatalf("after the reply: %q", got)
	}
}

// Text that shows nothing (a reasoning block the printer strips) is no
// output: the line stays and counts its tokens.
func TestStatusHiddenTextIsNoOutput(t *testing.T) {
	f := newFakeStatus()
	f.event(agentEv(agent.Event{Type: agent.EventTurnStart}))
	f.event(llmDelta(llm.EventTextDelta, "<think>"+strings.Repeat("z", 33)))
	if got, want := f.step(500*time.Millisecond), "\r⠙ waiting for the model · 0s · ↓ 10 tokens\x1b[K"; got != want {
		t.Fatalf("after hidden text: %q, want %q", got, want)
	}
}

// Streamed output is the progress: the line comes back only when it has
// paused (a long tool call being written after some text).
func TestStatusReturnsWhenOutputPauses(t *testing.T) {
	f := newFakeStatus()
	f.event(agentEv(agent.Event{Type: agent.EventTurnStart}))
	f.event(llmDelta(llm.EventTextDelta, "Writing it.\n"))
	io.WriteString(f.out, "Writing it.\n")
	if got := f.step(500 * time.Millisecond); got != "" {
		t.Fatalf("0.5s after text: %q", got)
	}
	f.event(llmDelta(llm.EventToolCallDelta, strings.Repeat("y", 4000)))
	if got, want := f.step(600*time.Millisecond), "\r⠹ waiting for the model · 1s · ↓ 1003 tokens\x1b[K"; got != want {
		t.Fatalf("1.1s after text: %q, want %q", got, want)
	}
}

func TestStatusLongTool(t *testing.T) {
	f := newFakeStatus()
	f.event(agentEv(agent.Event{Type: agent.EventTurnStart}))
	f.event(assistantEnd)
	if got := f.term.String(); got != "\r⠋ waiting for the model · 0s\x1b[K\r\x1b[K" {
		t.Fatalf("a model call with no output: %q", got)
	}
	f.event(agentEv(agent.Event{Type: agent.EventToolExecutionStart, ToolCallID: "c1", ToolName: "bash"}))
	io.WriteString(f.err, "→ bash {\"command\":\"sleep 5\"}\n")
	if got := f.step(900 * time.Millisecond); got != "" {
		t.Fatalf("a tool under a second: %q", got)
	}
	if got, want := f.step(200*time.Millisecond), "\r⠹ running bash · 1s\x1b[K"; got != want {
		t.Fatalf("a tool over a second: %q, want %q", got, want)
	}
	f.event(agentEv(agent.Event{Type: agent.EventToolExecutionStart, ToolCallID: "c2", ToolName: "read"}))
	if got, want := f.step(1500*time.Millisecond), "\r⠸ running bash (+1 more) · 2s\x1b[K"; got != want {
		t.Fatalf("two long tools: %q, want %q", got, want)
	}
	// A stderr line while the status shows: the line is erased first, the
	// text starts at the line start, the status comes back after it.
	before := f.term.Len()
	io.WriteString(f.err, "  ✗ read: no such file\n")
	if got := f.term.String()[before:]; got != "\r\x1b[K  ✗ read: no such file\n" {
		t.Fatalf("stderr line over the status: %q", got)
	}
	if got := f.step(100 * time.Millisecond); !strings.HasPrefix(got, "\r⠼ running bash (+1 more) · 2s") {
		t.Fatalf("after the line: %q", got)
	}
	f.event(agentEv(agent.Event{Type: agent.EventToolExecutionEnd, ToolCallID: "c1", ToolName: "bash"}))
	f.event(agentEv(agent.Event{Type: agent.EventToolExecutionEnd, ToolCallID: "c2", ToolName: "read"}))
	if !strings.HasSuffix(f.term.String(), "\r\x1b[K") || f.shown != "" {
		t.Fatalf("after the tools: %q", f.term.String())
	}
	f.event(runner.Event{Type: runner.EventRunEnd})
	f.stop()
	if got := f.step(5 * time.Second); got != "" {
		t.Fatalf("after stop: %q", got)
	}
}

// A retry keeps the wait's start: the time shown is the user's wait.
func TestStatusRetryKeepsElapsed(t *testing.T) {
	f := newFakeStatus()
	f.event(agentEv(agent.Event{Type: agent.EventTurnStart}))
	f.event(runner.Event{Type: runner.EventAttemptStart})
	f.step(4 * time.Second)
	f.event(runner.Event{Type: runner.EventAttemptStart})
	if got, want := f.shown, fmt.Sprintf("%s waiting for the model · 4s", spinnerFrames[1]); got != want {
		t.Fatalf("after a retry: %q, want %q", got, want)
	}
}
