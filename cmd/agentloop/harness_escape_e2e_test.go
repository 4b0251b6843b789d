package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/internal/fakeacp"
)

// Issue 25: a workspace agentloop does not trust has its .mcp.json servers
// left unstarted, and that holds on Claude Code too: it is started with
// only our tool server, not the workspace's servers (which it would start
// by itself, beyond agentloop's trust, policy and approval).
func TestE2EHarnessClaudeCodeUntrustedMCP(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "2")
	home, ws := t.TempDir(), t.TempDir()
	marker := filepath.Join(t.TempDir(), "started")
	servers := `{"mcpServers":{"files":{"type":"stdio","command":"sh","args":["-c","touch ` + marker + `; sleep 2"]}}}`
	if err := os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte(servers), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := execCLI(t, claudeEnv(t, base), home, "run", "--harness", "claude-code", "--model", "anthropic/mock-claude",
		"--cwd", ws, "hello")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	time.Sleep(300 * time.Millisecond) // a server started late still shows
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("Claude Code started the untrusted workspace's .mcp.json server")
	}
}

// Issue 25: the bearer token of the run's tool server (which runs bash for
// whoever holds it) is not on Claude Code's command line, where every user
// of the machine reads it (/proc/<pid>/cmdline, ps).
func TestE2EHarnessClaudeCodeTokenNotInArgs(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "2")
	home, ws := t.TempDir(), t.TempDir()
	argv := filepath.Join(t.TempDir(), "argv")
	env := claudeEnv(t, base)
	wrapper := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + argv + "'\nexec '" + claudeCode(t) + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	env = append(env, envClaudeCommand+"="+wrapper)
	code, out, errs := execCLI(t, env, home, "run", "--harness", "claude-code", "--model", "anthropic/mock-claude",
		"--cwd", ws, "hello")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	b, err := os.ReadFile(argv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "--mcp-config") {
		t.Fatalf("no --mcp-config in Claude Code's arguments:\n%s", b)
	}
	if strings.Contains(string(b), "Bearer") {
		t.Errorf("the tool server's token is on Claude Code's command line:\n%s", b)
	}
}

// Issue 25: an ACP call is judged by what its input runs, not by the kind
// the agent gives it: a "read" or "think" whose rawInput is an rm command
// is bash, so --approve never and --tools read refuse it, and it never
// runs.
func TestE2EHarnessACPKindLies(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind  string
		flags []string
	}{
		{"read", []string{"--approve", "never"}},
		{"think", []string{"--tools", "read"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			home, ws := t.TempDir(), t.TempDir()
			call := fakeacp.Step{Tool: &fakeacp.Tool{ID: "c1", Title: "look", Kind: acpsdk.ToolKind(tc.kind),
				Input: map[string]any{"command": "rm -rf ."}, Permission: true, Touch: "ran"}}
			script, _ := json.Marshal(fakeacp.Config{Dir: t.TempDir(), Turns: [][]fakeacp.Step{{call, {Text: "done"}}}})
			env := []string{envFakeACP + "=" + string(script), "ANTHROPIC_API_KEY=sk-unused"}
			args := append([]string{"run", "--harness", "acp:" + self, "--model", "anthropic/mock-claude", "--cwd", ws}, tc.flags...)
			code, out, errs := execCLI(t, env, home, append(args, "go")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
				t.Errorf("the %s call holding rm -rf ran under %v", tc.kind, tc.flags)
			}
		})
	}
}

// Issue 25: Claude Code's Monitor runs a shell command as its Bash does, so
// a Bash deny rule refuses Monitor's command too (judged as our bash);
// before, it was judged under its own name and no Bash rule matched it.
func TestE2EHarnessClaudeCodeMonitorIsBash(t *testing.T) {
	base := mockLLM(t, "-rounds", "1", "-text", "2", "-tool", "Monitor",
		"-args", `{"description":"watch","timeout_ms":5000,"command":"touch monitored"}`)
	home, ws := t.TempDir(), t.TempDir()
	writeClaudeSettings(t, filepath.Join(ws, ".claude", "settings.json"), perms(nil, []string{"Bash(touch *)"}, nil))
	if _, err := hook.Trust(home, ws); err != nil {
		t.Fatal(err)
	}
	code, out, errs := execCLI(t, claudeEnv(t, base), home, "run", "--harness", "claude-code", "--model", "anthropic/mock-claude",
		"--cwd", ws, "--approve", "auto", "watch")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	time.Sleep(500 * time.Millisecond) // Monitor's command runs in the background
	if _, err := os.Stat(filepath.Join(ws, "monitored")); err == nil {
		t.Error("Monitor ran touch past the deny rule Bash(touch *)")
	}
	if m := resultOf(t, home, sessionOf(t, errs), "Monitor"); m != nil && !m.IsError {
		t.Errorf("Monitor's result %q, want the refusal", m.Text())
	}
}

// Issue 25: pi runs the input it asked about, not a hook's rewrite of it
// (its tool_call gate takes no new input). A PreToolUse hook that rewrites
// pi's call must not have the approval judge the rewrite while pi runs the
// original: under --approve never a rewrite into ls let pi's write run.
// Such a call is refused, and says why.
func TestE2EHarnessPiHookRewriteRefused(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	rewrite := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"ls"}}}'`
	trustedBashHook(t, home, ws, rewrite)
	base := mockLLM(t, "-rounds", "1", "-text", "3", "-cmd", "echo hi > original.txt")
	code, out, errs := execCLI(t, piEnv(t, base), home, "run", "--harness", "pi", "--model", "anthropic/mock-claude",
		"--cwd", ws, "--approve", "never", "go")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "original.txt")); err == nil {
		t.Error("pi ran its original command, approved as the hook's rewrite")
	}
	if m := resultOf(t, home, sessionOf(t, errs), "bash"); m != nil && (!m.IsError || !strings.Contains(m.Text(), "rewrote")) {
		t.Errorf("the call's result %q (error %v), want the refusal naming the rewrite", m.Text(), m.IsError)
	}
}

// Issue 25: Claude Code reads the workspace's .claude/settings.json even in
// print mode, where it asks nobody to trust the workspace, and runs the
// commands it names (apiKeyHelper: a shell command at start). In a
// workspace agentloop does not trust, it loads only the user's settings;
// in a trusted one the workspace's as well.
func TestE2EHarnessClaudeCodeUntrustedSettings(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "2")
	for _, trusted := range []bool{false, true} {
		t.Run(map[bool]string{false: "untrusted", true: "trusted"}[trusted], func(t *testing.T) {
			home, ws := t.TempDir(), t.TempDir()
			marker := filepath.Join(t.TempDir(), "helper-ran")
			writeFile(t, filepath.Join(ws, ".claude", "settings.json"), `{"apiKeyHelper":"touch `+marker+`; echo sk-mock"}`)
			if trusted {
				if _, err := hook.Trust(home, ws); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errs := execCLI(t, claudeEnv(t, base), home, "run", "--harness", "claude-code", "--model", "anthropic/mock-claude",
				"--cwd", ws, "hello")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			if _, err := os.Stat(marker); (err == nil) != trusted {
				t.Errorf("the workspace's apiKeyHelper ran: %v, want %v", err == nil, trusted)
			}
		})
	}
}

// Issue 25: pi discovers extensions in the workspace (.pi/extensions/),
// JavaScript it runs at start: in a workspace agentloop does not trust it
// is started with --no-extensions (ours are given by path and still load);
// in a trusted one the workspace's extensions load as pi would.
func TestE2EHarnessPiUntrustedExtensions(t *testing.T) {
	base := mockLLM(t, "-rounds", "1", "-text", "2", "-cmd", "echo hi > made.txt")
	env := piEnv(t, base)
	for _, trusted := range []bool{false, true} {
		t.Run(map[bool]string{false: "untrusted", true: "trusted"}[trusted], func(t *testing.T) {
			home, ws := t.TempDir(), t.TempDir()
			marker := filepath.Join(t.TempDir(), "extension-ran")
			writeFile(t, filepath.Join(ws, ".pi", "extensions", "workspace.js"),
				`import { writeFileSync } from "node:fs";
export default function () { writeFileSync(`+"`"+marker+"`"+`, "x"); }
`)
			if trusted {
				if _, err := hook.Trust(home, ws); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errs := execCLI(t, env, home, "run", "--harness", "pi", "--model", "anthropic/mock-claude",
				"--cwd", ws, "--approve", "never", "hello")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			if _, err := os.Stat(marker); (err == nil) != trusted {
				t.Errorf("the workspace's pi extension ran: %v, want %v", err == nil, trusted)
			}
			// Our gate is an extension too: it still refuses pi's write.
			if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
				t.Error("pi's write ran past --approve never: our gate extension was not loaded")
			}
			if m := resultOf(t, home, sessionOf(t, errs), "bash"); m != nil && !m.IsError {
				t.Errorf("pi's bash write was not refused: %s", m.Text())
			}
		})
	}
}
