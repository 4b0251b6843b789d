package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// userPrompt is what `agentloop run` sends as the user's message: the
// text, and the images its @ includes named.
type userPrompt struct {
	text   string
	images []llm.Content
}

// readPrompt assembles the prompt of `agentloop run` from its arguments,
// joined by spaces: "-" reads stdin in its place, and piped stdin without a
// "-" follows the arguments, after a blank line (as `claude -p` reads
// `git diff | claude -p "review this diff"`), or is the whole prompt when
// there are none. A word @path naming a file of the workspace cwd includes
// it (see includeFiles).
func readPrompt(args []string, stdin io.Reader, stdinIsPipe bool, cwd string) (userPrompt, error) {
	if len(args) == 0 && !stdinIsPipe {
		return userPrompt{}, usageError{errors.New(`no prompt: give one as an argument ("agentloop run \"what is here?\""), or pipe it on stdin`)}
	}
	readStdin := func() (string, error) {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("read prompt from stdin: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	var parts []string
	dash := false
	for _, a := range args {
		if a == "-" && !dash {
			s, err := readStdin()
			if err != nil {
				return userPrompt{}, err
			}
			parts = append(parts, s)
			dash = true
			continue
		}
		parts = append(parts, a)
	}
	text := strings.Join(parts, " ")
	if !dash && stdinIsPipe && (len(args) == 0 || stdinHoldsInput(stdin)) {
		piped, err := readStdin()
		if err != nil {
			return userPrompt{}, err
		}
		switch {
		case strings.TrimSpace(piped) == "":
		case strings.TrimSpace(text) == "":
			text = piped
		default:
			text += "\n\n" + piped
		}
	}
	if strings.TrimSpace(text) == "" {
		return userPrompt{}, usageError{errors.New("the prompt is empty")}
	}
	return includeFiles(text, cwd)
}

// stdinHoldsInput reports whether stdin, beside a prompt argument, is
// something piped or redirected in (a pipe, a file) rather than a socket or
// a device a parent process left open: `ssh host agentloop run "…"` must not
// wait for an end of input that never comes.
func stdinHoldsInput(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return true // tests: a reader given as stdin
	}
	fi, err := f.Stat()
	return err == nil && (fi.Mode()&os.ModeNamedPipe != 0 || fi.Mode().IsRegular())
}

// usageError marks an error in how agentloop was called: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
