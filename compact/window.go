package compact

import (
	"errors"
	"fmt"
)

// Context-window guard thresholds, in tokens.
const (
	// MinContextWindow is the smallest window agentloop runs on: below it
	// a system prompt, the tools and a reply leave no room for a task.
	MinContextWindow = 16_000
	// WarnContextWindow is the window under which a warning is given:
	// compaction will run often and long tool outputs will be cut.
	WarnContextWindow = 32_000
)

// ErrWindowTooSmall is the kind of error CheckWindow returns for a window
// under MinContextWindow; test for it with errors.Is.
var ErrWindowTooSmall = errors.New("context window too small")

// WindowError says a model's context window is too small to run on.
type WindowError struct {
	Window int
}

func (e *WindowError) Error() string {
	if e.Window <= 0 {
		return fmt.Sprintf("context window unknown (%d tokens): set the model's contextWindow (at least %d tokens)",
			e.Window, MinContextWindow)
	}
	return fmt.Sprintf("context window of %d tokens is below the minimum of %d: choose a model with a larger window or correct its contextWindow",
		e.Window, MinContextWindow)
}

// Is makes errors.Is(err, ErrWindowTooSmall) true.
func (e *WindowError) Is(target error) bool { return target == ErrWindowTooSmall }

// CheckWindow guards a context window: under MinContextWindow it returns a
// *WindowError; under WarnContextWindow it returns a warning to show the
// user; otherwise both are empty.
func CheckWindow(window int) (warning string, err error) {
	if window < MinContextWindow {
		return "", &WindowError{Window: window}
	}
	if window < WarnContextWindow {
		return fmt.Sprintf("context window of %d tokens is small (under %d): expect frequent compaction and shortened tool results",
			window, WarnContextWindow), nil
	}
	return "", nil
}
