package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestMCPList(t *testing.T) {
	servers := greeterServers(t)
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, "mcp.json"), servers)
	writeFile(t, filepath.Join(ws, ".mcp.json"), `{"mcpServers":{"projsrv":{"command":"/bin/false"}}}`)
	env, out, errb := testEnv(home, "")
	if code := execute(t.Context(), env, []string{"mcp", "list", "--cwd", ws}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := out.String(); !strings.Contains(got, "greeter") || !strings.Contains(got, "mcp__greeter__greet") || !strings.Contains(got, "ready") {
		t.Errorf("mcp list:\n%s", got)
	}
	if strings.Contains(out.String(), "projsrv") || !strings.Contains(errb.String(), "not trusted") || !strings.Contains(errb.String(), "projsrv") {
		t.Errorf("untrusted project server: stdout %q, stderr %q", out.String(), errb.String())
	}
}
