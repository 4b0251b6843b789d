package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Issue 21 item 7: what a newcomer meets, through the built binary.

// Issue 21: `mcp list` in an untrusted workspace says its servers are
// skipped and why, and a server that cannot start is a row of the table,
// not a Go log line.
func TestE2EMCPListUntrusted(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, ".mcp.json"), `{"mcpServers":{"projsrv":{"command":"/bin/false"}}}`)
	code, out, errs := execCLIIn(t, "", ws, home, nil, "mcp", "list")
	if code != 0 || strings.Contains(out, "no MCP servers configured") || !strings.Contains(out, "not trusted") || !strings.Contains(out, "projsrv") || !strings.Contains(out, "agentloop trust") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if strings.Count(out+errs, "projsrv") != 1 {
		t.Errorf("said more than once:\n%s%s", out, errs)
	}

	writeFile(t, filepath.Join(home, "mcp.json"), `{"mcpServers":{"broken":{"command":"/nonexistent/server"}}}`)
	code, out, errs = execCLIIn(t, "", ws, home, nil, "mcp", "list")
	if code != 0 || !strings.Contains(out, "broken") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if goLogLine.MatchString(out) || goLogLine.MatchString(errs) {
		t.Errorf("a raw Go log line:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
}

// goLogLine is how the log and slog packages' default output starts.
var goLogLine = regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d `)

func TestE2EFlagMistakes(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--modle", "faux/demo", "hi"}, []string{"unknown flag --modle", "did you mean --model", `"agentloop run --help"`}},
		{[]string{"run", "--max-turns", "abc", "hi"}, []string{"--max-turns abc: want a whole number"}},
		{[]string{"run", "--timeout", "5", "hi"}, []string{"--timeout 5: want a duration with a unit, like 30s"}},
		{[]string{"sessions", "list", "--cwdd", "x"}, []string{"did you mean --cwd", "--help"}},
	} {
		code, _, errs := execCLIIn(t, "", home, home, nil, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errs, w)
			}
		}
		if strings.Contains(errs, "strconv.") || strings.Contains(errs, "time: missing unit") {
			t.Errorf("%v: Go's parse error reaches the user: %q", tc.args, errs)
		}
	}
}
