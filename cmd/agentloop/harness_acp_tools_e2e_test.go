package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	acpReadWrite(t, home, ws, false, "auto")
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

// Issue 25: an ACP agent that takes only stdio MCP servers gets the run's
// tools from our binary's hidden mcp-bridge command (the tool server's URL
// and token in its environment, not its argv): its call of our read tool
// runs in the workspace, our write is refused by --approve never, and the
// bridge process is gone once the run is over.
func TestE2EHarnessACPStdioBridge(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "hello.txt"), "the secret word is plum\n")
	errs := acpReadWrite(t, home, ws, true, "never")
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Error("our write tool ran under --approve never")
	}
	id := sessionOf(t, errs)
	if m := resultOf(t, home, id, "read hello"); m != nil && (m.IsError || !strings.Contains(m.Text(), "plum")) {
		t.Errorf("our read tool's result over the bridge %q (error %v)", m.Text(), m.IsError)
	}
	if m := resultOf(t, home, id, "write out"); m != nil && (!m.IsError || !strings.Contains(m.Text(), `approval mode "never"`)) {
		t.Errorf("the refused write's result %q (error %v) does not say our approval refused it", m.Text(), m.IsError)
	}
	// The bridge was the agent's child, in the workspace: none may be left.
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := bridgesIn(ws)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcp-bridge processes outlived the run: %v", left)
		}
		time.Sleep(20 * time.Millisecond) // waiting on processes that are not ours
	}
	_, help, _ := execCLI(t, nil, home, "--help")
	if strings.Contains(help, "mcp-bridge") {
		t.Errorf("the hidden mcp-bridge command is listed in --help:\n%s", help)
	}
}

// acpReadWrite runs the scripted ACP agent (this test binary) on one turn
// that calls our read (hello.txt) and write (out.txt) tools over MCP, then
// answers "done"; noHTTP makes it an agent that takes stdio MCP servers
// only. It returns the CLI's stderr.
func acpReadWrite(t *testing.T, home, ws string, noHTTP bool, approve string) string {
	t.Helper()
	read := fakeacp.Step{Tool: &fakeacp.Tool{ID: "r1", Title: "read hello", Kind: "read", MCP: "read", Input: map[string]any{"path": "hello.txt"}}}
	write := fakeacp.Step{Tool: &fakeacp.Tool{ID: "w1", Title: "write out", Kind: "edit", MCP: "write", Input: map[string]any{"path": "out.txt", "content": "x"}}}
	script, _ := json.Marshal(fakeacp.Config{Dir: t.TempDir(), NoHTTPMCP: noHTTP, Turns: [][]fakeacp.Step{{read, write, {Text: "done"}}}})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{envFakeACP + "=" + string(script), "ANTHROPIC_API_KEY=sk-unused"}
	code, out, errs := execCLI(t, env, home, "run", "--harness", "acp:"+self, "--model", "anthropic/mock-claude", "--cwd", ws, "--approve", approve, "read and write")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	return errs
}

// bridgesIn lists the mcp-bridge processes whose working directory is dir.
func bridgesIn(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if d, err := os.Readlink(p); err != nil || d != dir {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		if strings.Contains(string(cmdline), "mcp-bridge") {
			out = append(out, filepath.Dir(p)+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}
