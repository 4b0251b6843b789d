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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/internal/mcptest"
	"github.com/agentloop/agentloop/llm"
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

// protoLine is a line of protocol v2 as docs/protocol.md documents it:
// the envelope and every payload field of every event type. Decoding with
// DisallowUnknownFields fails on any field the page does not list.
type protoLine struct {
	V         int    `json:"v"`
	Type      string `json:"type"`
	Seq       int64  `json:"seq"`
	RunID     string `json:"runId"`
	SessionID string `json:"sessionId"`

	Turn         int               `json:"turn"`
	Message      *llm.Message      `json:"message"`
	Event        string            `json:"event"`
	ContentIndex *int              `json:"contentIndex"`
	Delta        string            `json:"delta"`
	Block        *llm.Content      `json:"block"`
	ToolCallID   string            `json:"toolCallId"`
	ToolName     string            `json:"toolName"`
	Args         json.RawMessage   `json:"args"`
	Partial      *protoResult      `json:"partial"`
	Result       *protoResult      `json:"result"`
	IsError      *bool             `json:"isError"`
	StopReason   string            `json:"stopReason"`
	Reason       string            `json:"reason"`
	Usage        *llm.Usage        `json:"usage"`
	Hook         string            `json:"hook"`
	MaxTokens    int               `json:"maxTokens"`
	Count        int               `json:"count"`
	Model        string            `json:"model"`
	Cwd          string            `json:"cwd"`
	Lane         string            `json:"lane"`
	Tools        []string          `json:"tools"`
	Resumed      bool              `json:"resumed"`
	Text         string            `json:"text"`
	DelayMs      int64             `json:"delayMs"`
	Attempt      int               `json:"attempt"`
	Max          int               `json:"max"`
	Position     int               `json:"position"`
	WaitedMs     int64             `json:"waitedMs"`
	Streamed     bool              `json:"streamed"`
	Window       int               `json:"window"`
	Trigger      string            `json:"trigger"`
	Route        string            `json:"route"`
	TokensBefore int               `json:"tokensBefore"`
	TokensAfter  int               `json:"tokensAfter"`
	Truncated    int               `json:"truncated"`
	Record       *json.RawMessage  `json:"record"`
	Records      []json.RawMessage `json:"records"`
	Snip         *json.RawMessage  `json:"snip"`
	Attempts     int               `json:"attempts"`
	Retries      int               `json:"retries"`
	Compactions  int               `json:"compactions"`
	SessionPath  string            `json:"sessionPath"`
	Warnings     []string          `json:"warnings"`
	Error        string            `json:"error"`
	Failure      string            `json:"failure"`
}

type protoResult struct {
	Content []llm.Content   `json:"content"`
	Details json.RawMessage `json:"details"`
}

// Every --json line of a faux run with a retry and tool calls decodes
// strictly into the documented line; the envelope is the same on every
// line, seq grows by one, run_start comes first and run_end last, and
// markup in the arguments stays literal on stdout and stderr.
func TestRunJSON(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "a<b>&c.txt"), "alpha\n")
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"steps":[
		{"error":{"reason":"overloaded","status":529,"message":"busy","beforeStart":true}},
		{"text":"Reading.","toolCalls":[{"name":"read","arguments":{"path":"a<b>&c.txt"}}]},
		{"text":"It says alpha & more."}]}`)
	code, out, errs := runCLI(t, "", "run", "--json", "--script", script, "--retry-base", "1ms", "--cwd", ws, "look")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var lines []protoLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var l protoLine
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %d does not decode as documented: %v\n%s", len(lines)+1, err, sc.Text())
		}
		lines = append(lines, l)
	}
	if len(lines) < 4 || lines[0].Type != "run_start" || lines[len(lines)-1].Type != "run_end" {
		t.Fatalf("%d lines, want run_start first and run_end last:\n%s", len(lines), out)
	}
	first := lines[0]
	if first.SessionID == "" || first.RunID == "" || first.Cwd != ws || first.Model == "" || !slices.Contains(first.Tools, "read") {
		t.Errorf("run_start %+v, want the session, run, cwd, model and tools", first)
	}
	seen := map[string]bool{}
	for i, l := range lines {
		seen[l.Type] = true
		if l.V != 2 || l.RunID != first.RunID || l.SessionID != first.SessionID {
			t.Errorf("line %d has another envelope: %+v", i+1, l)
		}
		want := lines[0].Seq + int64(i)
		if l.Type == "reply" {
			// The CLI's reply line annotates the message_end before it.
			if l.Seq != lines[i-1].Seq || lines[i-1].Type != "message_end" {
				t.Errorf("reply line %d with seq %d after %s %d", i+1, l.Seq, lines[i-1].Type, lines[i-1].Seq)
			}
			continue
		}
		if prev := i - 1; prev >= 0 {
			want = lines[prev].Seq + 1
		}
		if i == 0 {
			want = 1
		}
		if l.Seq != want {
			t.Errorf("line %d (%s) has seq %d, want %d", i+1, l.Type, l.Seq, want)
		}
	}
	for _, typ := range []string{"attempt_start", "retry", "tool_execution_start", "tool_execution_end", "reply"} {
		if !seen[typ] {
			t.Errorf("no %s line", typ)
		}
	}
	for _, raw := range []string{`"a<b>&c.txt"`, `alpha & more`} {
		if !strings.Contains(out, raw) {
			t.Errorf("stdout does not carry %s literally", raw)
		}
	}
	if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) {
		t.Errorf("stdout escapes markup")
	}

	// The text display's tool line keeps it literal too.
	code, _, errs = runCLI(t, "", "run", "--script", script, "--retry-base", "1ms", "--cwd", ws, "look")
	if code != 0 || !strings.Contains(errs, `a<b>&c.txt`) {
		t.Errorf("exit %d, stderr without the literal path:\n%s", code, errs)
	}
}

// A transcript, and what sessions export and show make of it, keep a tool
// call's markup as typed (it used to be stored as \u003e and \u0026).
func TestSessionExportKeepsMarkup(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "a<b>&c.txt"), "alpha\n")
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"steps":[
		{"toolCalls":[{"name":"read","arguments":{"path":"a<b>&c.txt"}}]},
		{"text":"done"}]}`)
	home := t.TempDir()
	env, _, errs := testEnv(home, "")
	if code := execute(context.Background(), env, []string{"run", "--script", script, "--cwd", ws, "look"}); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	id := ""
	for _, l := range strings.Split(errs.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "session: "); ok {
			id = strings.TrimSpace(rest)
		}
	}
	if id == "" {
		t.Fatalf("no session id in\n%s", errs)
	}
	for _, args := range [][]string{{"sessions", "export", id}, {"sessions", "show", id}} {
		env, out, errs := testEnv(home, "")
		if code := execute(context.Background(), env, args); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		if !strings.Contains(out.String(), `a<b>&c.txt`) || strings.Contains(out.String(), `\u003c`) || strings.Contains(out.String(), `\u0026`) {
			t.Errorf("%v does not show the path as typed:\n%s", args, out)
		}
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
	mcptest.ServeFromEnv() // the test binary as an MCP server of generated tools (toolsearch_e2e_test.go)
	if os.Getenv("AGENTLOOP_TEST_MAIN") == "1" {
		os.Exit(mainExit())
	}
	if script := os.Getenv(envFakeACP); script != "" {
		os.Exit(serveFakeACP(script)) // this binary is the ACP agent of a test
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
		`{"steps":[{"text":"one two three four five six seven eight nine ten","delayMs":200,"tailMs":20000}]}`)
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
