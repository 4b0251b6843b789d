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
