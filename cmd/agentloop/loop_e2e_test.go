package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runProc runs agentloop as its own process (this test binary acting as the
// command, see TestMain) against the mockllm at base, with OPENAI_API_KEY
// set, and returns the exit code, stdout and stderr.
func runProc(t *testing.T, home, ws, base string, args ...string) (int, string, string) {
	t.Helper()
	all := append([]string{"run", "--model", "openai/mock-model", "--base-url", base + "/v1", "--cwd", ws}, args...)
	cmd := exec.Command(os.Args[0], all...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "AGENTLOOP_TEST_MAIN=1", "AGENTLOOP_HOME="+home, "OPENAI_API_KEY=sk-mock")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run agentloop: %v", err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

// toolResultTexts returns the text of every tool result in a captured
// Chat Completions request body.
func toolResultTexts(t *testing.T, body string) []string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("captured request: %v", err)
	}
	var out []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, string(m.Content))
		}
	}
	return out
}

// Issue 16.1: a model that repeats one identical call is warned at the
// 10th, refused from the 20th and stopped by the breaker at the 30th, for
// bash (whose details carry a duration that differs on every call) as for
// read; stderr shows one line per call and the breaker's reason.
func TestE2ELoopGuardStopsRepeatedCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		mock []string
	}{
		{"bash", []string{"-cmd", "echo same"}},
		{"read", []string{"-tool", "read", "-args", `{"path":"hello.txt"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "requests.jsonl")
			base := mockLLM(t, append([]string{"-rounds", "40", "-capture", capture}, tc.mock...)...)
			home, ws := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(ws, "hello.txt"), "hello\n")
			code, _, errs := runProc(t, home, ws, base, "--no-session", "go")
			if code != 1 {
				t.Errorf("exit %d, want 1 (the breaker stopped the run)", code)
			}
			if n := mockStats(t, base)["requests"]; n > 32 {
				t.Errorf("%d requests, want at most 32", n)
			}
			var calls, warned, refused, stopLines int
			for _, line := range strings.Split(errs, "\n") {
				switch {
				case strings.HasPrefix(line, "→ "+tc.name+" "):
					calls++
					if strings.Contains(line, "⚠ loop detection (warning)") {
						warned++
					}
					if strings.Contains(line, "✗ loop detection (") {
						refused++
					}
				case strings.Contains(line, "loop detection"):
					t.Errorf("a second line for one looping call: %q", line)
				case strings.Contains(line, "✗ "+tc.name):
					t.Errorf("a refused call printed twice: %q", line)
				case strings.Contains(line, "circuit breaker stopped the run"):
					stopLines++
				}
			}
			if calls != 30 || warned != 10 || refused != 11 {
				t.Errorf("%d calls, %d warned, %d refused: want 30 calls, warned 10-19, refused 20-30\n%s", calls, warned, refused, tail(errs, 2000))
			}
			if stopLines != 1 || !strings.Contains(errs, "made no progress 30 times in a row") {
				t.Errorf("stderr does not end with the breaker's reason:\n%s", tail(errs, 1000))
			}
			reqs := readLines(t, capture)
			sawWarning := false
			for _, r := range toolResultTexts(t, reqs[len(reqs)-1]) {
				if strings.Contains(r, "WARNING: this is call 10 of "+tc.name) {
					sawWarning = true
				}
			}
			if !sawWarning {
				t.Errorf("the model never saw the 10th call's warning in a tool result")
			}
		})
	}
}

// Issue 16.1: run_end carries the breaker's reason.
func TestE2ELoopGuardRunEnd(t *testing.T) {
	base := mockLLM(t, "-rounds", "40", "-cmd", "echo same")
	code, out, _ := runProc(t, t.TempDir(), t.TempDir(), base, "--no-session", "--json", "go")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var end struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
		Text   string `json:"text"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.Type != "run_end" {
		t.Fatalf("last line %q (%v), want run_end", lines[len(lines)-1], err)
	}
	if end.Reason != "loop_detected" || !strings.Contains(end.Text, "circuit breaker") {
		t.Errorf("run_end %+v, want the breaker's reason", end)
	}
}

// Issue 16.2: a call to a tool that does not exist stays in the history
// with its error result, which names the tools that exist, and the loop
// guard counts it: the breaker stops a model that keeps making it.
func TestE2EUnknownToolKeptAndCounted(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "40", "-tool", "nosuchtool", "-args", `{"x":1}`, "-capture", capture)
	code, _, errs := runProc(t, t.TempDir(), t.TempDir(), base, "--no-session", "go")
	if code != 1 || !strings.Contains(errs, "nosuchtool has made no progress 30 times in a row") {
		t.Errorf("exit %d, want 1 with the breaker's reason:\n%s", code, tail(errs, 1500))
	}
	if n := mockStats(t, base)["requests"]; n > 32 {
		t.Errorf("%d requests, want at most 32", n)
	}
	reqs := readLines(t, capture)
	if len(reqs) < 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	third := reqs[2]
	results := toolResultTexts(t, third)
	if len(results) != 2 || strings.Count(third, `"name":"nosuchtool"`) != 2 {
		t.Fatalf("the third request carries %d results and %d calls, want both pairs:\n%s", len(results), strings.Count(third, `"name":"nosuchtool"`), third)
	}
	for _, r := range results {
		if !strings.Contains(r, "not found") || !strings.Contains(r, "bash") || !strings.Contains(r, "read") {
			t.Errorf("the result does not name the tools that exist: %s", r)
		}
	}
	warned := false
	for _, r := range toolResultTexts(t, reqs[len(reqs)-1]) {
		warned = warned || strings.Contains(r, "WARNING: this is call 10 of nosuchtool")
	}
	if !warned {
		t.Errorf("the model was never warned about the repeated unknown call")
	}
}
