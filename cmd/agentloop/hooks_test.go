package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestHooksListAndTrust(t *testing.T) {
	home := t.TempDir()
	ws := t.TempDir()
	writeFile(t, filepath.Join(home, "settings.json"),
		`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo user-stop"}]}]}}`)
	writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"),
		`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"guard.sh","timeout":5}]}]}}`)
	env, out, _ := testEnv(home, "")

	if code := execute(t.Context(), env, []string{"hooks", "list", "--cwd", ws}); code != 0 {
		t.Fatalf("hooks list exit %d", code)
	}
	got := out.String()
	if !strings.Contains(got, "user-stop") || !strings.Contains(got, "guard.sh") {
		t.Fatalf("hooks list lacks a hook:\n%s", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.Contains(line, "guard.sh") && !strings.Contains(line, "inactive") {
			t.Errorf("project hook of an untrusted workspace shown active: %q", line)
		}
		if strings.Contains(line, "user-stop") && !strings.Contains(line, "active") {
			t.Errorf("user hook not active: %q", line)
		}
	}

	out.Reset()
	if code := execute(t.Context(), env, []string{"trust", ws}); code != 0 {
		t.Fatalf("trust exit %d", code)
	}
	out.Reset()
	execute(t.Context(), env, []string{"hooks", "list", "--cwd", ws})
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "guard.sh") && strings.Contains(line, "inactive") {
			t.Errorf("project hook still inactive after trust: %q", line)
		}
	}
}
