package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/internal/fakeacp"
)

// Issue 25: an ACP agent's calls of our tools over MCP (no permission
// request: the gate asks our approval) meet PreToolUse and PostToolUse
// command hooks (real scripts), the two paired by one tool_use_id; a
// PreToolUse hook that blocks refuses the call, which then never runs and
// fires no PostToolUse.
func TestE2EHarnessACPGateHooks(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "hello.txt"), "the secret word is plum\n")
	log := filepath.Join(t.TempDir(), "hooks.log")
	pre := `in=$(cat); printf '%s\n' "$(printf '%s' "$in" | jq -r '["pre", (.tool_name | ascii_downcase), .tool_use_id, (.tool_input.file_path // .tool_input.path)] | join(" ")')" >> ` + log +
		`; if [ "$(printf '%s' "$in" | jq -r '.tool_name | ascii_downcase')" = write ]; then echo "no writes here" >&2; exit 2; fi`
	post := `printf '%s\n' "$(jq -r '["post", (.tool_name | ascii_downcase), .tool_use_id, (.tool_response | tostring | contains("plum") | tostring)] | join(" ")')" >> ` + log
	entry := func(cmd string) []any {
		return []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": cmd}}}}
	}
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": entry(pre), "PostToolUse": entry(post)}})
	writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), string(settings))
	if _, err := hook.Trust(home, ws); err != nil {
		t.Fatal(err)
	}
	read := fakeacp.Step{Tool: &fakeacp.Tool{ID: "r1", Title: "read hello", Kind: "read", MCP: "read", Input: map[string]any{"path": "hello.txt"}}}
	write := fakeacp.Step{Tool: &fakeacp.Tool{ID: "w1", Title: "write out", Kind: "edit", MCP: "write", Input: map[string]any{"path": "out.txt", "content": "x"}}}
	script, _ := json.Marshal(fakeacp.Config{Dir: t.TempDir(), Turns: [][]fakeacp.Step{{read, write, {Text: "done"}}}})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{envFakeACP + "=" + string(script), "ANTHROPIC_API_KEY=sk-unused"}
	code, out, errs := execCLI(t, env, home, "run", "--harness", "acp:"+self, "--model", "anthropic/mock-claude", "--cwd", ws, "--approve", "auto", "read and write")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Error("the write the PreToolUse hook blocked ran")
	}
	data, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 {
		t.Fatalf("hook log, want pre read, post read, pre write:\n%s", data)
	}
	preRead, postRead, preWrite := strings.Fields(lines[0]), strings.Fields(lines[1]), strings.Fields(lines[2])
	if len(preRead) != 4 || preRead[0] != "pre" || preRead[1] != "read" || !strings.HasSuffix(preRead[3], "hello.txt") {
		t.Errorf("PreToolUse of read: %q", lines[0])
	}
	if len(postRead) != 4 || postRead[0] != "post" || postRead[1] != "read" || postRead[3] != "true" {
		t.Errorf("PostToolUse of read (its response must hold the file's text): %q", lines[1])
	}
	if len(preRead) == 4 && len(postRead) == 4 && preRead[2] != postRead[2] {
		t.Errorf("PreToolUse and PostToolUse of one call carry different ids: %q, %q", preRead[2], postRead[2])
	}
	if len(preWrite) != 4 || preWrite[0] != "pre" || preWrite[1] != "write" || !strings.HasSuffix(preWrite[3], "out.txt") {
		t.Errorf("PreToolUse of write: %q", lines[2])
	}
	t.Logf("hook log:\n%s", data)
}
