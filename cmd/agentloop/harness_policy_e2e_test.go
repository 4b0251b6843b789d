package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/internal/fakeacp"
)

// anthropicTools returns, for each Anthropic Messages request in a mockllm
// capture file, the names of the tools it offered.
func anthropicTools(t *testing.T, capture string) [][]string {
	t.Helper()
	var out [][]string
	for _, l := range readLines(t, capture) {
		var req struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(l), &req); err != nil {
			t.Fatalf("a captured request: %v", err)
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		out = append(out, names)
	}
	return out
}

// Issue 25: the run's tool policy binds the engine's own tools. mockllm
// asks for the engine's shell tool with a command that writes a file;
// with the default policy it runs, with --tools read or --read-only
// (--approve auto: nothing is asked) the engine is not even offered its
// shell or its file-changing tools, and the file is never written; a
// model that calls the shell anyway gets no shell.
func TestE2EHarnessToolPolicy(t *testing.T) {
	mutating := []string{"Bash", "Write", "Edit", "MultiEdit", "NotebookEdit", "bash", "write", "edit", "mcp__agentloop__bash", "mcp__agentloop__write"}
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				flags []string
				force bool // the model calls the shell tool whether it is offered or not
				wrote bool
			}{
				{"default", nil, false, true},
				{"tools read", []string{"--tools", "read"}, false, false},
				{"read-only", []string{"--read-only"}, false, false},
				{"tools read, shell called anyway", []string{"--tools", "read"}, true, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					capture := filepath.Join(t.TempDir(), "requests.jsonl")
					mock := []string{"-rounds", "1", "-text", "3", "-cmd", "echo hi > made.txt", "-capture", capture}
					if tc.force {
						mock = append(mock, "-tool", eng.bash, "-args", `{"command":"echo hi > made.txt"}`)
					}
					base := mockLLM(t, mock...)
					home, ws := t.TempDir(), t.TempDir()
					args := append([]string{"run", "--harness", eng.name, "--model", "anthropic/mock-claude", "--cwd", ws, "--approve", "auto"}, tc.flags...)
					code, out, errs := execCLI(t, eng.env(t, base), home, append(args, "make the file")...)
					if code != 0 {
						t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
					}
					_, err := os.Stat(filepath.Join(ws, "made.txt"))
					if wrote := err == nil; wrote != tc.wrote {
						t.Errorf("the file was written: %v, want %v\nstderr %s", wrote, tc.wrote, errs)
					}
					reqs := anthropicTools(t, capture)
					if len(reqs) == 0 {
						t.Fatal("no model request captured")
					}
					offered := false
					for i, names := range reqs {
						if slices.Contains(names, eng.bash) {
							offered = true
						}
						if !tc.wrote {
							for _, n := range names {
								if slices.Contains(mutating, n) {
									t.Errorf("request %d offers %s under %v: %v", i+1, n, tc.flags, names)
								}
							}
						}
					}
					if tc.wrote && !offered {
						t.Errorf("no request offers %s under the default policy: %v", eng.bash, reqs)
					}
				})
			}
		})
	}
}

// Issue 25: under --tools read Claude Code keeps our MCP tools (its
// --tools names only its own): its call of mcp__agentloop__read runs in
// our registry.
func TestE2EHarnessClaudeCodeToolsKeepsOurs(t *testing.T) {
	base := mockLLM(t, "-rounds", "1", "-text", "3", "-tool", "mcp__agentloop__read", "-args", `{"path":"hello.txt"}`)
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "hello.txt"), "the secret word is plum\n")
	code, out, errs := execCLI(t, claudeEnv(t, base), home, "run", "--harness", "claude-code", "--model", "anthropic/mock-claude",
		"--cwd", ws, "--tools", "read", "read hello.txt")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if m := resultOf(t, home, sessionOf(t, errs), "mcp__agentloop__read"); m != nil && (m.IsError || !strings.Contains(m.Text(), "plum")) {
		t.Errorf("our read tool's result %q (error %v)", m.Text(), m.IsError)
	}
}

// Issue 25: an ACP agent's calls are judged as the tools of ours they are
// (kind execute is bash): with --tools read an execute call is refused
// before anyone is asked, with a reason naming the policy; a Bash(rm *)
// deny rule in a trusted workspace's settings refuses an execute call of
// `rm -rf x` under --approve auto, while the agent's other command runs.
func TestE2EHarnessACPToolPolicy(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	step := func(id, command, touch string) fakeacp.Step {
		return fakeacp.Step{Tool: &fakeacp.Tool{ID: id, Title: "Run a command", Kind: "execute",
			Input: map[string]any{"command": command}, Permission: true, Touch: touch}}
	}
	for _, tc := range []struct {
		name    string
		flags   []string
		rules   bool
		steps   []fakeacp.Step
		touched []string // the files the calls that ran made
		results string   // the (last) call's result
	}{
		{"tools read", []string{"--tools", "read"}, false, []fakeacp.Step{step("x1", "echo hi > made.txt", "made.txt")}, nil,
			"Denied: Run a command (bash here) is not in this run's tools (--tools read)."},
		{"default", nil, false, []fakeacp.Step{step("x1", "echo hi > made.txt", "made.txt")}, []string{"made.txt"}, "Run a command done"},
		{"deny rule", nil, true, []fakeacp.Step{step("x1", "rm -rf x", "removed"), step("x2", "ls", "listed")}, []string{"listed"},
			"the user refused this call"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, ws := t.TempDir(), t.TempDir()
			if tc.rules {
				writeClaudeSettings(t, filepath.Join(ws, ".claude", "settings.json"), perms(nil, []string{"Bash(rm *)"}, nil))
				if _, err := hook.Trust(home, ws); err != nil {
					t.Fatal(err)
				}
			}
			script, _ := json.Marshal(fakeacp.Config{Dir: t.TempDir(), Turns: [][]fakeacp.Step{append(tc.steps, fakeacp.Step{Text: "done"})}})
			env := []string{envFakeACP + "=" + string(script), "ANTHROPIC_API_KEY=sk-unused"}
			args := append([]string{"run", "--harness", "acp:" + self, "--model", "anthropic/mock-claude", "--cwd", ws, "--approve", "auto"}, tc.flags...)
			code, out, errs := execCLI(t, env, home, append(args, "go")...)
			if code != 0 || !strings.Contains(out, "done") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			for _, f := range []string{"made.txt", "removed", "listed"} {
				_, err := os.Stat(filepath.Join(ws, f))
				if ran, want := err == nil, slices.Contains(tc.touched, f); ran != want {
					t.Errorf("%s made: %v, want %v", f, ran, want)
				}
			}
			if tc.rules {
				msgs, _ := mirrored(t, home, sessionOf(t, errs))
				if got := strings.Join(msgs, " | "); !strings.Contains(got, "call:Run a command | result:Run a command:error | call:Run a command | result:Run a command | assistant:done") {
					t.Errorf("transcript %s: want the rm refused and the ls run", got)
				}
			} else if m := resultOf(t, home, sessionOf(t, errs), "Run a command"); m != nil && !strings.Contains(m.Text(), tc.results) {
				t.Errorf("the call's result %q, want %q", m.Text(), tc.results)
			}
		})
	}
}
