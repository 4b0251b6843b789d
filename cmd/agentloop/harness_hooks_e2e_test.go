package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/hook"
)

// Issue 25: Claude Code runs its read-only tools without asking unless
// told to ask; under agentloop every call asks us (can_use_tool), so a
// deny rule of agentloop's settings refuses Claude Code's Read of .env,
// even where the workspace's own .claude/settings.json allows Read, and
// the model reads our refusal. Without the rule the read goes through
// under --approve auto, and under never and ask too (it only reads),
// without anyone asked (there is no terminal: a question would refuse it).
func TestE2EHarnessClaudeCodeReadRules(t *testing.T) {
	for _, tc := range []struct {
		name, approve string
		deny          bool
	}{{"denied", "auto", true}, {"auto", "auto", false}, {"never", "never", false}, {"ask", "ask", false}} {
		t.Run(tc.name, func(t *testing.T) {
			home, ws := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(ws, ".env"), "SECRET=plum\n")
			// Claude Code's own project settings allow every Read: that must
			// not take the call past our approval.
			writeFile(t, filepath.Join(ws, ".claude", "settings.json"), `{"permissions":{"allow":["Read"]}}`)
			if tc.deny {
				writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), `{"permissions":{"deny":["Read(./.env)"]}}`)
			}
			if _, err := hook.Trust(home, ws); err != nil {
				t.Fatal(err)
			}
			capture := filepath.Join(t.TempDir(), "requests.jsonl")
			args, _ := json.Marshal(map[string]string{"file_path": filepath.Join(ws, ".env")})
			base := mockLLM(t, "-rounds", "1", "-text", "3", "-tool", "Read", "-args", string(args), "-capture", capture)
			code, out, errs := execCLI(t, claudeEnv(t, base), home, "run", "--harness", "claude-code", "--model", "anthropic/mock-claude",
				"--cwd", ws, "--approve", tc.approve, "read .env")
			if code != 0 || !strings.Contains(out, "word word done") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			m := resultOf(t, home, sessionOf(t, errs), "Read")
			if m == nil {
				return
			}
			reqs, _ := os.ReadFile(capture)
			if tc.deny {
				if !m.IsError || !strings.Contains(m.Text(), `permission rule "Read(./.env)"`) || strings.Contains(m.Text(), "plum") {
					t.Errorf("the Read's result %q (error %v), want our deny rule's refusal", m.Text(), m.IsError)
				}
				if !strings.Contains(string(reqs), `Denied by the permission rule \"Read(./.env)\"`) || strings.Contains(string(reqs), "SECRET=plum") {
					t.Errorf("the model's next request does not carry our refusal (or carries the secret):\n%s", tail(string(reqs), 2000))
				}
				return
			}
			if m.IsError || !strings.Contains(m.Text(), "SECRET=plum") {
				t.Errorf("the Read's result %q (error %v), want the file", m.Text(), m.IsError)
			}
		})
	}
}

// Issue 25: a PreToolUse and a PostToolUse hook of the workspace's
// .claude/settings.json (trusted) fire exactly once for each call of the
// engine, and it is agentloop that runs them (the hook sees
// AGENTLOOP_PROJECT_DIR): Claude Code, which reads the same file, runs
// none itself, neither for a Bash call it asks about nor for a Read it
// would run without asking; pi runs no hook of ours.
func TestE2EHarnessHooksFireOnce(t *testing.T) {
	for _, eng := range engines {
		for _, call := range []string{"bash", "read"} {
			t.Run(eng.name+"/"+call, func(t *testing.T) { testHarnessHooksFireOnce(t, eng, call) })
		}
	}
}

func testHarnessHooksFireOnce(t *testing.T, eng engine, call string) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "hello.txt"), "the secret word is plum\n")
	log := filepath.Join(t.TempDir(), "hooks.log")
	logLine := func(event string) string {
		return `printf '%s %s\n' "$(jq -r '["` + event + `", .tool_name, .tool_use_id] | join(" ")')" "${AGENTLOOP_PROJECT_DIR:+by-agentloop}" >> ` + log
	}
	entry := func(cmd string) []any {
		return []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": cmd}}}}
	}
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": entry(logLine("pre")), "PostToolUse": entry(logLine("post"))}})
	writeFile(t, filepath.Join(ws, ".claude", "settings.json"), string(settings))
	if _, err := hook.Trust(home, ws); err != nil {
		t.Fatal(err)
	}
	var script []string
	name := eng.bash // the engine's name of the call, and the hook's (our tools go by Claude Code's)
	switch {
	case call == "bash":
		script = []string{"-cmd", "echo hi > made.txt"}
	case eng.name == "claude-code":
		args, _ := json.Marshal(map[string]string{"file_path": filepath.Join(ws, "hello.txt")})
		script, name = []string{"-tool", "Read", "-args", string(args)}, "Read"
	default:
		script, name = []string{"-tool", "read", "-args", `{"path":"hello.txt"}`}, "read"
	}
	base := mockLLM(t, append([]string{"-rounds", "1", "-text", "3"}, script...)...)
	code, out, errs := execCLI(t, eng.env(t, base), home, "run", "--harness", eng.name, "--model", "anthropic/mock-claude", "--cwd", ws, "go")
	if code != 0 || !strings.Contains(out, "word word done") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	m := resultOf(t, home, sessionOf(t, errs), name)
	if m == nil {
		return
	}
	if m.IsError {
		t.Fatalf("the call failed: %s", m.Text())
	}
	hookName := map[string]string{"bash": "Bash", "read": "Read"}[strings.ToLower(name)]
	want := "pre " + hookName + " " + m.ToolCallID + " by-agentloop | post " + hookName + " " + m.ToolCallID + " by-agentloop"
	data, _ := os.ReadFile(log)
	if got := strings.ReplaceAll(strings.TrimSpace(string(data)), "\n", " | "); got != want {
		t.Errorf("hook log\n got %q\nwant %q", got, want)
	}
}

// Issue 25: a PreToolUse hook's rewritten arguments (updatedInput) of a
// Claude Code call reach Claude Code, which runs the rewritten command;
// they are not refused because Bash is no tool of our registry.
func TestE2EHarnessClaudeCodeHookRewrite(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	rewrite := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"echo hi > rewritten.txt"}}}'`
	trustedBashHook(t, home, ws, rewrite)
	base := mockLLM(t, "-rounds", "1", "-text", "3", "-cmd", "echo hi > original.txt")
	code, out, errs := execCLI(t, claudeEnv(t, base), home, "run", "--harness", "claude-code", "--model", "anthropic/mock-claude", "--cwd", ws, "go")
	if code != 0 || !strings.Contains(out, "word word done") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if m := resultOf(t, home, sessionOf(t, errs), "Bash"); m != nil && m.IsError {
		t.Errorf("the rewritten call failed: %s", m.Text())
	}
	if _, err := os.Stat(filepath.Join(ws, "rewritten.txt")); err != nil {
		t.Errorf("the rewritten command did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "original.txt")); err == nil {
		t.Error("the original command ran")
	}
}

// trustedBashHook makes command the PreToolUse hook of Bash calls in ws's
// .agentloop/settings.json, and trusts ws under home.
func trustedBashHook(t *testing.T, home, ws, command string) {
	t.Helper()
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash",
		"hooks": []any{map[string]any{"type": "command", "command": command}}}}}})
	writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), string(settings))
	if _, err := hook.Trust(home, ws); err != nil {
		t.Fatal(err)
	}
}
