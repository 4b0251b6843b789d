package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/hook"
)

// Issue 21: Claude Code's settings files and permission rules, through
// the built binary against mockllm.

func writeClaudeSettings(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
}

func perms(allow, deny, ask []string) map[string]any {
	return map[string]any{"permissions": map[string]any{"allow": allow, "deny": deny, "ask": ask}}
}

func TestE2EPermissionDenyOverAllow(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-mock"}
	for _, tc := range []struct {
		name    string
		trust   bool
		project bool // the rules are in <ws>/.claude/settings.json, else ~/.claude/settings.json
		approve string
		kept    bool // the deny held: build/ is still there
	}{
		// With --approve ask and no terminal the call would be refused
		// unless a rule allowed it: the allow rule counts, the deny wins.
		{"project file, trusted", true, true, "ask", true},
		{"user file", false, false, "ask", true},
		// An untrusted project's rules count for nothing: auto runs it.
		{"project file, untrusted", false, true, "auto", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "req.jsonl")
			base := mockLLM(t, "-rounds", "1", "-cmd", "rm -rf build", "-capture", capture)
			home, ws := t.TempDir(), t.TempDir()
			if err := os.MkdirAll(filepath.Join(ws, "build"), 0o755); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(home, ".claude", "settings.json")
			if tc.project {
				file = filepath.Join(ws, ".claude", "settings.json")
			}
			writeClaudeSettings(t, file, perms([]string{"Bash"}, []string{"Bash(rm:*)"}, nil))
			if tc.trust {
				if _, err := hook.Trust(home, ws); err != nil {
					t.Fatal(err)
				}
			}
			code, _, errs := execCLIIn(t, "", ws, home, env, mockArgs(base, "--approve", tc.approve, "clean up")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			_, err := os.Stat(filepath.Join(ws, "build"))
			if kept := err == nil; kept != tc.kept {
				t.Fatalf("build kept = %v, want %v\n%s", kept, tc.kept, errs)
			}
			reqs := readLines(t, capture)
			if tc.kept && (len(reqs) != 2 || !strings.Contains(reqs[1], `Denied by the permission rule \"Bash(rm:*)\"`)) {
				t.Errorf("the model was not told which rule refused the call:\n%s", strings.Join(reqs[1:], "\n"))
			}
		})
	}
}

// An allow rule decides before --approve never's default, and an ask rule
// asks (here: no terminal, so refused) where --approve auto would run.
func TestE2EPermissionAllowAndAsk(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-mock"}
	for _, tc := range []struct {
		name     string
		settings map[string]any
		approve  string
		made     bool
	}{
		{"never without rules", perms(nil, nil, nil), "never", false},
		{"allow rule over never", perms([]string{"Bash(touch:*)"}, nil, nil), "never", true},
		{"allow rule for another command", perms([]string{"Bash(npm run test)"}, nil, nil), "never", false},
		{"ask rule over auto", perms(nil, nil, []string{"Bash(touch made)"}), "auto", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := mockLLM(t, "-rounds", "1", "-cmd", "touch made")
			home, ws := t.TempDir(), t.TempDir()
			writeClaudeSettings(t, filepath.Join(ws, ".claude", "settings.local.json"), tc.settings)
			if _, err := hook.Trust(home, ws); err != nil {
				t.Fatal(err)
			}
			code, _, errs := execCLIIn(t, "", ws, home, env, mockArgs(base, "--approve", tc.approve, "make it")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			if _, err := os.Stat(filepath.Join(ws, "made")); (err == nil) != tc.made {
				t.Errorf("made = %v, want %v\n%s", err == nil, tc.made, errs)
			}
		})
	}
}

func TestE2EPermissionsList(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeClaudeSettings(t, filepath.Join(home, ".claude", "settings.json"), perms([]string{"Bash(git diff:*)"}, nil, nil))
	writeClaudeSettings(t, filepath.Join(ws, ".claude", "settings.json"), perms([]string{"Edit"}, []string{"Read(./secrets/**)", "WebFetch(domain:example.com)"}, nil))
	code, out, errs := execCLIIn(t, "", ws, home, nil, "permissions")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"deny  ", "Read(./secrets/**)", "read,grep,find,ls", "inactive: the workspace is not trusted",
		"Bash(git diff:*)", filepath.Join(home, ".claude", "settings.json"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "Read(./secrets/**)") > strings.Index(out, "Bash(git diff:*)") {
		t.Errorf("deny rules are not listed first:\n%s", out)
	}
	if code, out, _ = execCLIIn(t, "", ws, home, nil, "permissions", "--trust"); code != 0 || strings.Contains(out, "inactive") || !strings.Contains(out, "no effect: agentloop has no WebFetch tool") {
		t.Errorf("with --trust:\n%s", out)
	}
}

// A PreToolUse hook in .claude/settings.json fires, and hooks list shows
// where it comes from.
func TestE2EClaudeSettingsHooks(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "req.jsonl")
	base := mockLLM(t, "-rounds", "1", "-cmd", "rm -rf build", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeGuard(t, ws)
	if err := os.Rename(filepath.Join(ws, ".agentloop"), filepath.Join(ws, ".claude")); err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Trust(home, ws); err != nil {
		t.Fatal(err)
	}
	code, out, errs := execCLIIn(t, "", ws, home, nil, "hooks", "list")
	if code != 0 || !strings.Contains(out, filepath.Join(ws, ".claude", "settings.json")) || !strings.Contains(out, "PreToolUse") {
		t.Errorf("hooks list (exit %d):\n%s%s", code, out, errs)
	}
	code, _, errs = execCLIIn(t, "", ws, home, []string{"OPENAI_API_KEY=sk-mock"}, mockArgs(base, "clean up")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err != nil {
		t.Errorf("the .claude/settings.json hook did not stop rm -rf: %v", err)
	}
	if reqs := readLines(t, capture); len(reqs) != 2 || !strings.Contains(reqs[1], "destructive command refused by policy") {
		t.Errorf("the model was not told why: %d requests", len(reqs))
	}
}

// A deny rule that names a tool alone ("Bash") offers no such tool: the
// model never sees it, as in Claude Code.
func TestE2EPermissionBareDenyHidesTool(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "req.jsonl")
	base := mockLLM(t, "-rounds", "0", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	writeClaudeSettings(t, filepath.Join(home, ".claude", "settings.json"), perms(nil, []string{"Bash"}, nil))
	code, _, errs := execCLIIn(t, "", ws, home, []string{"OPENAI_API_KEY=sk-mock"}, mockArgs(base, "hi")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var body struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(readLines(t, capture)[0]), &body); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Function.Name)
	}
	if slices.Contains(names, "bash") || !slices.Contains(names, "read") {
		t.Errorf("tools offered: %v", names)
	}
}

// An allow rule's words do not allow a redirection that writes: with
// Bash(echo:*) allowed and --approve never, the model's `echo hi > f` is
// refused and f is not made; a bare Bash allow, for contrast, runs it.
func TestE2EPermissionAllowRuleDoesNotAllowRedirection(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-mock"}
	for _, tc := range []struct {
		allow string
		made  bool
	}{
		{"Bash(echo:*)", false},
		{"Bash", true},
	} {
		t.Run(tc.allow, func(t *testing.T) {
			base := mockLLM(t, "-rounds", "1", "-cmd", "echo hi > f")
			home, ws := t.TempDir(), t.TempDir()
			writeClaudeSettings(t, filepath.Join(ws, ".claude", "settings.local.json"), perms([]string{tc.allow}, nil, nil))
			if _, err := hook.Trust(home, ws); err != nil {
				t.Fatal(err)
			}
			code, _, errs := execCLIIn(t, "", ws, home, env, mockArgs(base, "--approve", "never", "write it")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			if _, err := os.Stat(filepath.Join(ws, "f")); (err == nil) != tc.made {
				t.Errorf("f made = %v, want %v\n%s", err == nil, tc.made, errs)
			}
		})
	}
}

// A Read(./.env) deny keeps .env's contents from the model when the call
// names it another way: grep over the workspace, a symlink to it.
func TestE2EPermissionDenyFollowsThePath(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-mock"}
	for _, tc := range []struct{ tool, args string }{
		{"grep", `{"pattern":"SECRET","path":"."}`},
		{"read", `{"path":"notes.txt"}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "req.jsonl")
			base := mockLLM(t, "-rounds", "1", "-tool", tc.tool, "-args", tc.args, "-capture", capture)
			home, ws := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET=hunter2-topsecret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(".env", filepath.Join(ws, "notes.txt")); err != nil {
				t.Fatal(err)
			}
			writeClaudeSettings(t, filepath.Join(ws, ".claude", "settings.json"), perms(nil, []string{"Read(./.env)"}, nil))
			if _, err := hook.Trust(home, ws); err != nil {
				t.Fatal(err)
			}
			code, _, errs := execCLIIn(t, "", ws, home, env, mockArgs(base, "--approve", "auto", "look")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			reqs := readLines(t, capture)
			if len(reqs) != 2 || strings.Contains(reqs[1], "hunter2") || !strings.Contains(reqs[1], `Denied by the permission rule \"Read(./.env)\"`) {
				t.Errorf("the denied file reached the model, or the refusal did not say which rule:\n%s", strings.Join(reqs[1:], "\n"))
			}
		})
	}
}
