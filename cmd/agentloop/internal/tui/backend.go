package tui

import (
	"context"

	"github.com/agentloop/agentloop/runner"
)

// Backend is what the chat drives: a run in process, or a gateway.
type Backend interface {
	// Send starts a run on text. Its events come back to the program as
	// EventMsg, in order, ending with run_end.
	Send(text string) error
	// Steer and FollowUp queue text into the run in progress; they report
	// false when the run no longer takes messages.
	Steer(text string) bool
	FollowUp(text string) bool
	// Abort stops the run in progress.
	Abort()
	// Command runs a slash command the backend owns (everything but /help,
	// /quit, /cost and /copy) and returns the text to show.
	Command(ctx context.Context, name, args string) (string, error)
	// State is what the status line shows, read after each command.
	State() State
}

// State is the backend's side of the status line.
type State struct {
	// Model is provider/id; Thinking the level ("" is off); Approve the
	// approval mode; Session the session id ("" before the first run).
	Model, Thinking, Approve, Session string
}

// EventMsg carries one event of a run to the program.
type EventMsg struct{ Event runner.Event }

// RunErrorMsg says a run could not start or its event stream failed.
type RunErrorMsg struct{ Err error }

// SendMsg sends text as if typed and entered (the chat's first message,
// given on the command line).
type SendMsg struct{ Text string }
