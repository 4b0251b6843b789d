package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// runCLI runs the command line in-process and returns the exit code,
// stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	env, out, errb := testEnv(t.TempDir(), stdin)
	code := execute(context.Background(), env, args)
	return code, out.String(), errb.String()
}

// testEnv is a process environment for in-process commands: home is
// $AGENTLOOP_HOME, no other variable is set, stdin is the given text.
func testEnv(home, stdin string) (*cliEnv, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	env := &cliEnv{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(k string) string {
			if k == "AGENTLOOP_HOME" {
				return home
			}
			return ""
		},
		stdinIsPipe: stdin != "",
	}
	env.lookupEnv = func(k string) (string, bool) {
		v := env.getenv(k)
		return v, v != ""
	}
	return env, &out, &errb
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunDemo(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "README.md"), "# Project Zebra\n")
	code, out, errs := runCLI(t, "", "run", "--model", "faux/demo", "--cwd", ws, "what is in this folder?")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	if !strings.Contains(out, "README.md") || !strings.Contains(out, "Project Zebra") {
		t.Errorf("stdout does not describe the folder:\n%s", out)
	}
	for _, want := range []string{"→ ls", "→ read", "usage: 3 turns, 2 tool calls"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestRunJSON(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "a.txt"), "alpha\n")
	code, out, errs := runCLI(t, "", "run", "--json", "--model", "faux/demo", "--cwd", ws, "look")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var types []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev struct {
			V    int    `json:"v"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line is not JSON: %q", sc.Text())
		}
		if ev.V != 1 {
			t.Errorf("line without \"v\":1: %s", sc.Text())
		}
		types = append(types, ev.Type)
	}
	if len(types) < 4 || types[0] != "attempt_start" || types[1] != "agent_start" ||
		types[len(types)-2] != "agent_end" || types[len(types)-1] != "run_end" {
		t.Errorf("event types = %v", types)
	}
}

func TestRunPromptSources(t *testing.T) {
	ws := t.TempDir()
	script := writeFile(t, filepath.Join(ws, "echo.json"), `{"steps":[{"text":"ok"}]}`)
	writeFile(t, filepath.Join(ws, "notes.txt"), "NOTE-CONTENT")

	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		errs  string
	}{
		{"argument", "", []string{"hello"}, 0, ""},
		{"stdin dash", "from stdin\n", []string{"-"}, 0, ""},
		{"stdin pipe without argument", "piped", nil, 0, ""},
		{"file reference", "", []string{"read", "@notes.txt"}, 0, ""},
		{"missing file reference is text", "", []string{"read", "@nope.txt"}, 0, ""},
		{"file outside the workspace", "", []string{"read", "@/etc/hostname"}, 2, "outside the workspace"},
		{"no prompt", "", nil, 2, "no prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--script", script, "--cwd", ws}, tt.args...)
			code, _, errs := runCLI(t, tt.stdin, args...)
			if code != tt.code || !strings.Contains(errs, tt.errs) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tt.code, errs, tt.errs)
			}
		})
	}
}

func TestRunUsageErrors(t *testing.T) {
	ws := t.TempDir()
	tests := []struct {
		args []string
		errs string
	}{
		{[]string{"run", "--bogus", "x"}, "unknown flag"},
		{[]string{"run", "--model", "faux/nope", "x"}, "built-in scripts"},
		{[]string{"run", "--model", "faux/demo", "--thinking", "huge", "x"}, "--thinking"},
		{[]string{"run", "--model", "faux/demo", "--cwd", filepath.Join(ws, "missing"), "x"}, "not a directory"},
		{[]string{"run", "--model", "faux/demo", "--profile", "wild", "x"}, "--profile"},
		{[]string{"run", "--model", "faux/demo", "--approve", "maybe", "x"}, "maybe"},
	}
	for _, tt := range tests {
		code, _, errs := runCLI(t, "", tt.args...)
		if code != 2 || !strings.Contains(errs, tt.errs) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, errs, tt.errs)
		}
	}
}

func TestRunMaxTurns(t *testing.T) {
	ws := t.TempDir()
	script := writeFile(t, filepath.Join(ws, "loop.json"),
		`{"repeat":true,"steps":[{"toolCalls":[{"name":"ls","arguments":{"path":"."}}]}]}`)
	code, _, errs := runCLI(t, "", "run", "--script", script, "--cwd", ws, "--max-turns", "3", "go")
	if code != 1 || !strings.Contains(errs, "turn limit") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}

// TestMain lets the test binary act as the agentloop command, so the
// interrupt test can signal a real process.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTLOOP_TEST_MAIN") == "1" {
		os.Exit(mainExit())
	}
	code := m.Run()
	if mockDir != "" {
		os.RemoveAll(mockDir)
	}
	if cliBin != "" {
		os.RemoveAll(filepath.Dir(cliBin))
	}
	if code == 0 {
		// Runs go in-process: nothing they start may outlive them.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestInterruptExits130(t *testing.T) {
	ws := t.TempDir()
	script := writeFile(t, filepath.Join(ws, "slow.json"),
		`{"steps":[{"text":"one two three four five six seven eight nine ten","delayMs":200}]}`)
	cmd := exec.Command(os.Args[0], "run", "--script", script, "--cwd", ws, "go")
	cmd.Env = append(os.Environ(), "AGENTLOOP_TEST_MAIN=1", "AGENTLOOP_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stderr = &out
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	// Wait for the first streamed text, then interrupt.
	buf := make([]byte, 1)
	if _, err := pr.Read(buf); err != nil {
		t.Fatalf("no output before interrupt: %v (%s)", err, out.String())
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the run did not end after Ctrl-C")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit code %d after Ctrl-C, want 130; output: %s", code, out.String())
	}
}
