package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// readPrompt assembles the prompt of `agentloop run` from its arguments:
// "-" (or no argument while stdin is a pipe) reads stdin, and a word
// "@path" is replaced by the contents of that file, relative to cwd.
func readPrompt(args []string, stdin io.Reader, stdinIsPipe bool, cwd string) (string, error) {
	if len(args) == 0 {
		if !stdinIsPipe {
			return "", usageError{errors.New(`no prompt: give one as an argument ("agentloop run \"what is here?\""), or pipe it on stdin`)}
		}
		args = []string{"-"}
	}
	var parts []string
	for _, a := range args {
		switch {
		case a == "-":
			b, err := io.ReadAll(stdin)
			if err != nil {
				return "", fmt.Errorf("read prompt from stdin: %w", err)
			}
			parts = append(parts, strings.TrimRight(string(b), "\n"))
		default:
			s, err := expandFileRefs(a, cwd)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
	}
	p := strings.TrimSpace(strings.Join(parts, " "))
	if p == "" {
		return "", usageError{errors.New("the prompt is empty")}
	}
	return p, nil
}

// expandFileRefs replaces each whitespace-separated word "@path" of s that
// names a readable file with the file, fenced and labelled with its path.
// A word "@..." that names no file is an error, so a typo is never sent to
// the model as is; "@@x" stands for a literal "@x".
func expandFileRefs(s, cwd string) (string, error) {
	words := strings.Fields(s)
	if !strings.Contains(s, "@") {
		return s, nil
	}
	changed := false
	for i, w := range words {
		if strings.HasPrefix(w, "@@") {
			words[i] = w[1:]
			changed = true
			continue
		}
		if len(w) < 2 || w[0] != '@' {
			continue
		}
		path := w[1:]
		full := path
		if !filepath.IsAbs(full) {
			full = filepath.Join(cwd, path)
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return "", usageError{fmt.Errorf("cannot include %s: %v (write @@%s for a literal @)", w, errors.Unwrap(err), path)}
		}
		words[i] = fmt.Sprintf("\n\n<file path=%q>\n%s\n</file>\n\n", path, strings.TrimRight(string(data), "\n"))
		changed = true
	}
	if !changed {
		return s, nil
	}
	return strings.Join(words, " "), nil
}

// usageError marks an error in how agentloop was called: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
