package runner_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's library example builds and prints what the README says.
func TestREADMELibraryExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "## The library")
	if i < 0 {
		t.Fatal("README has no library section")
	}
	text = text[i:]
	code, rest, ok := between(text, "```go\n", "```\n")
	if !ok {
		t.Fatal("no Go block in the library section")
	}
	want, _, ok := between(rest, "It prints:\n\n```\n", "```\n")
	if !ok {
		t.Fatal("the library section does not say what the example prints")
	}
	// Inside the module, so that it builds against this checkout; the
	// leading underscore keeps it out of ./... patterns.
	dir, err := os.MkdirTemp("..", "_readme")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "./"+filepath.Base(dir))
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if string(out) != want {
		t.Errorf("the example printed\n%s\nthe README says\n%s", out, want)
	}
}

// between returns the text of s between the first begin and the next end,
// and what follows end.
func between(s, begin, end string) (inner, rest string, ok bool) {
	i := strings.Index(s, begin)
	if i < 0 {
		return "", "", false
	}
	s = s[i+len(begin):]
	j := strings.Index(s, end)
	if j < 0 {
		return "", "", false
	}
	return s[:j], s[j+len(end):], true
}
