package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/claudecode"
	"github.com/agentloop/agentloop/harness/pi"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/internal/fakeacp"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// Claude Code from npm, installed once per machine like the MCP server.
const claudeCodePackage = "@anthropic-ai/claude-code@2.1.328"

var (
	claudeOnce sync.Once
	claudeBin  string
	claudeErr  error
)

// claudeCode returns the claude executable, installing the package when it
// is not cached; it skips the test when npm cannot be had, and fails in CI.
func claudeCode(t *testing.T) string {
	t.Helper()
	claudeOnce.Do(func() {
		arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
		// The native binary of the platform package; the package's own bin
		// is a copy of it only once its postinstall script ran.
		claudeBin, claudeErr = npmInstalled(claudeCodePackage, filepath.Join("node_modules", "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+arch, "claude"))
		if claudeErr != nil {
			if b, err := npmInstalled(claudeCodePackage, filepath.Join("node_modules", ".bin", "claude")); err == nil {
				claudeBin, claudeErr = b, nil
			}
		}
	})
	if claudeErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Claude Code from npm is needed in CI: %v", claudeErr)
		}
		t.Skipf("Claude Code from npm is not available (%v): skipping the tests against the real engine", claudeErr)
	}
	return claudeBin
}

// piPackage is pi from npm, installed once per machine like Claude Code.
const piPackage = "@mariozechner/pi-coding-agent@0.73.1"

var (
	piOnce sync.Once
	piBin  string
	piErr  error
)

// piAgent returns the pi executable, installing the package when needed.
func piAgent(t *testing.T) string {
	t.Helper()
	piOnce.Do(func() {
		if _, err := exec.LookPath("node"); err != nil {
			piErr = fmt.Errorf("node is not installed: %v", err)
			return
		}
		piBin, piErr = npmInstalled(piPackage, filepath.Join("node_modules", ".bin", "pi"))
	})
	if piErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("pi from npm is needed in CI: %v", piErr)
		}
		t.Skipf("pi from npm is not available (%v): skipping the tests against the real engine", piErr)
	}
	return piBin
}

// piEnv points pi at mockllm at base the way ../shared/bench/peers/pi.sh
// does: a models.json of its own naming the scripted server.
func piEnv(t *testing.T, base string) []string {
	dir := t.TempDir()
	models := fmt.Sprintf(`{"providers":{"mock-anthropic":{"baseUrl":%q,"api":"anthropic-messages","apiKey":"MOCK_API_KEY",`+
		`"models":[{"id":"mock-claude","contextWindow":200000,"maxTokens":4096}]}}}`, base)
	if err := os.WriteFile(filepath.Join(dir, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"PI_CODING_AGENT_DIR=" + dir, "PI_OFFLINE=1", "PI_TELEMETRY=0", "MOCK_API_KEY=sk-mock",
		"ANTHROPIC_API_KEY=sk-mock", "ANTHROPIC_BASE_URL=" + base,
		envPiCommand + "=" + piAgent(t), envPiModel + "=mock-anthropic/mock-claude"}
}

// engine is one external engine under the e2e tests.
type engine struct {
	name string
	env  func(t *testing.T, base string) []string
	// bash is the engine's name for its shell tool.
	bash string
	// lose deletes the native session the binding names.
	lose func(t *testing.T, home, native string)
}

var engines = []engine{
	{"claude-code", claudeEnv, "Bash", func(t *testing.T, home, native string) {
		// Claude Code keeps its sessions under HOME.
		files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", native+".jsonl"))
		if len(files) != 1 {
			t.Fatalf("Claude Code's session file for %s not found under %s", native, home)
		}
		os.Remove(files[0])
	}},
	{"pi", piEnv, "bash", func(t *testing.T, _, native string) {
		if err := os.Remove(native); err != nil { // the binding is pi's session file
			t.Fatal(err)
		}
	}},
}

// claudeEnv is what Claude Code needs to run against mockllm at base, the
// way ../shared/bench/peers/cc.sh starts it.
func claudeEnv(t *testing.T, base string) []string {
	return []string{"ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_API_KEY=sk-mock", "IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		envClaudeCommand + "=" + claudeCode(t)}
}

func sessionOf(t *testing.T, stderr string) string {
	t.Helper()
	id := sessionLine(stderr)
	if id == "" {
		t.Fatalf("no session in the output: %s", stderr)
	}
	return id
}

// mirrored loads a session and returns its messages as lines, checking
// that no mirror id repeats and counting its bindings.
func mirrored(t *testing.T, home, id string) (msgs []string, bindings []string) {
	t.Helper()
	tr, err := session.NewJSONLStore(filepath.Join(home, "sessions")).Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range tr.Entries {
		switch e.Type {
		case session.EntryHarnessBinding:
			bindings = append(bindings, e.NativeID)
		case session.EntryMessage:
			if e.IdemKey == "" || seen[e.IdemKey] {
				t.Errorf("entry %s: mirror id %q missing or repeated", e.ID, e.IdemKey)
			}
			seen[e.IdemKey] = true
			m := e.Message
			line := string(m.Role) + ":" + m.Text()
			if cs := m.ToolCalls(); len(cs) > 0 {
				line = "call:" + cs[0].Name
			}
			if m.Role == "toolResult" {
				line = "result:" + m.ToolName
				if m.IsError {
					line += ":error"
				}
			}
			msgs = append(msgs, line)
		}
	}
	return msgs, bindings
}

// Issue 25: a two-turn session on each engine against mockllm. Turn one
// runs a tool that writes a file, approved by our policy; turn two resumes
// Claude Code's own session (its request carries turn one); the
// transcript holds each item once, with one binding; sessions show
// renders it. Then the native session is deleted: the next turn fails
// with the way out, unbind clears the binding, and a new one starts.
func TestE2EHarnessTwoTurns(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) { testHarnessTwoTurns(t, eng) })
	}
}

func testHarnessTwoTurns(t *testing.T, eng engine) {
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "1", "-text", "3", "-cmd", "echo hi > made.txt", "-capture", capture)
	env := eng.env(t, base)
	home, ws := t.TempDir(), t.TempDir()
	args := []string{"run", "--harness", eng.name, "--model", "anthropic/mock-claude", "--cwd", ws}
	code, out, errs := execCLI(t, env, home, append(args, "make the file")...)
	if code != 0 || !strings.Contains(out, "word word done") {
		t.Fatalf("turn 1: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err != nil {
		t.Fatalf("the approved tool did not run in the workspace: %v", err)
	}
	id := sessionOf(t, errs)
	code, out, errs = execCLI(t, env, home, append(args, "--session", id, "and again")...)
	if code != 0 || !strings.Contains(out, "word word done") {
		t.Fatalf("turn 2: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	msgs, bindings := mirrored(t, home, id)
	want := "user:make the file | call:B | result:B | assistant:word word done | user:and again | assistant:word word done"
	want = strings.ReplaceAll(want, ":B", ":"+eng.bash)
	if got := strings.Join(msgs, " | "); got != want {
		t.Errorf("transcript\n got %s\nwant %s", got, want)
	}
	if len(bindings) != 1 {
		t.Fatalf("bindings %v, want one: turn two resumes the native session", bindings)
	}
	reqs, _ := os.ReadFile(capture)
	lines := strings.Split(strings.TrimSpace(string(reqs)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "make the file") || !strings.Contains(last, "and again") {
		t.Errorf("turn two's model request does not carry turn one: %s did not resume its session", eng.name)
	}
	code, out, _ = execCLI(t, env, home, "sessions", "show", id)
	if code != 0 || !strings.Contains(out, "bound to "+eng.name+" session "+bindings[0]) || !strings.Contains(out, "and again") {
		t.Errorf("sessions show: exit %d\n%s", code, out)
	}

	// The native session goes away.
	eng.lose(t, home, bindings[0])
	code, _, errs = execCLI(t, env, home, append(args, "--session", id, "third")...)
	if code == 0 || !strings.Contains(errs, "agentloop sessions unbind "+id) {
		t.Fatalf("lost binding: exit %d, stderr %s", code, errs)
	}
	if msgs2, b2 := mirrored(t, home, id); len(msgs2) != len(msgs) || len(b2) != 1 {
		t.Errorf("a lost binding changed the transcript: %v %v", msgs2, b2)
	}
	if code, out, errs = execCLI(t, env, home, "sessions", "unbind", id); code != 0 || !strings.Contains(out, "no longer bound") {
		t.Fatalf("unbind: exit %d %s %s", code, out, errs)
	}
	if code, _, errs = execCLI(t, env, home, append(args, "--session", id, "third")...); code != 0 {
		t.Fatalf("after unbind: exit %d %s", code, errs)
	}
	if _, b3 := mirrored(t, home, id); len(b3) != 3 || b3[1] != "" || b3[2] == "" || b3[2] == bindings[0] {
		t.Errorf("bindings after unbind %v, want the old one, the clearing, and a new native session", b3)
	}
}

// Issue 25: the engine's permission request (Claude Code's can_use_tool,
// pi's through our extension) is answered by our approval:
// with --approve never the file-writing command is refused, never runs,
// and the refusal is in the transcript as the call's error result.
func TestE2EHarnessApprovalDenies(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) { testHarnessApprovalDenies(t, eng) })
	}
}

func testHarnessApprovalDenies(t *testing.T, eng engine) {
	base := mockLLM(t, "-rounds", "1", "-text", "3", "-cmd", "echo hi > denied.txt")
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := execCLI(t, eng.env(t, base), home, "run", "--harness", eng.name, "--model", "anthropic/mock-claude",
		"--cwd", ws, "--approve", "never", "write it")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "denied.txt")); err == nil {
		t.Fatal("the refused command ran")
	}
	msgs, _ := mirrored(t, home, sessionOf(t, errs))
	if got := strings.Join(msgs, " | "); !strings.Contains(got, "call:"+eng.bash+" | result:"+eng.bash+":error") {
		t.Errorf("transcript %s, want the refused call with its error result", got)
	}
}

// Issue 25: Ctrl-C while the engine's tool runs: the turn is interrupted
// (Claude Code's control protocol, pi's abort command), the run exits 130 within the abort bound,
// the call keeps its result in the transcript, and no process of the tool
// is left.
func TestE2EHarnessAbortMidTool(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) { testHarnessAbortMidTool(t, eng) })
	}
}

func testHarnessAbortMidTool(t *testing.T, eng engine) {
	base := mockLLM(t, "-rounds", "1", "-text", "3", "-cmd", "echo started > slow.txt; tail -f /dev/null")
	home, ws := t.TempDir(), t.TempDir()
	cmd := exec.Command(builtCLI(t), "run", "--harness", eng.name, "--model", "anthropic/mock-claude", "--cwd", ws, "go slow")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}, eng.env(t, base)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(ws, "slow.txt")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("the tool never started: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a child process's file
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the run did not end after Ctrl-C: %s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130: %s", code, errb.String())
	}
	t.Logf("stopped %s after the interrupt", time.Since(start).Round(time.Millisecond))
	msgs, _ := mirrored(t, home, sessionOf(t, errb.String()))
	if got := strings.Join(msgs, " | "); !strings.Contains(got, "call:"+eng.bash+" | result:"+eng.bash) {
		t.Errorf("transcript %s: the interrupted call lost its result", got)
	}
	// The tool ran in the workspace: no process may still be there.
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if dir, err := os.Readlink(p); err == nil && dir == ws {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			t.Errorf("a process of the tool outlived the run: %s %q", p, cmdline)
		}
	}
}

// envFakeACP, set to a fakeacp script, makes the test binary an ACP agent.
const envFakeACP = "AGENTLOOP_FAKEACP"

func serveFakeACP(script string) int {
	var cfg fakeacp.Config
	if err := json.Unmarshal([]byte(script), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fakeacp.Serve(cfg, os.Stdin, os.Stdout)
	return 0
}

// Issue 25: `run --harness acp:<command>` on an ACP agent (the scripted
// one of internal/fakeacp, this test binary): two turns on one native
// session, the refused edit never runs, and sessions show renders the
// mirrored session with its binding.
func TestE2EHarnessACP(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	edit := fakeacp.Step{Tool: &fakeacp.Tool{ID: "e1", Title: "edit notes", Kind: "edit", Input: map[string]any{"path": "notes"}, Permission: true, Touch: "notes"}}
	script, _ := json.Marshal(fakeacp.Config{Dir: t.TempDir(), Turns: [][]fakeacp.Step{
		{{Text: "first answer"}}, {edit, {Text: "second answer"}}}})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{envFakeACP + "=" + string(script), "ANTHROPIC_API_KEY=sk-unused"}
	args := []string{"run", "--harness", "acp:" + self, "--model", "anthropic/mock-claude", "--cwd", ws, "--approve", "never"}
	code, out, errs := execCLI(t, env, home, append(args, "one")...)
	if code != 0 || !strings.Contains(out, "first answer") {
		t.Fatalf("turn 1: exit %d\n%s\n%s", code, out, errs)
	}
	id := sessionOf(t, errs)
	code, out, errs = execCLI(t, env, home, append(args, "--session", id, "two")...)
	if code != 0 || !strings.Contains(out, "second answer") {
		t.Fatalf("turn 2: exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(errs, "connection closed") {
		t.Errorf("the ACP library's own log reached the user's stderr:\n%s", errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes")); err == nil {
		t.Error("the edit refused by --approve never ran")
	}
	msgs, bindings := mirrored(t, home, id)
	want := "user:one | assistant:first answer | user:two | call:edit notes | result:edit notes:error | assistant:second answer"
	if got := strings.Join(msgs, " | "); got != want || len(bindings) != 1 {
		t.Errorf("transcript\n got %s\nwant %s\nbindings %v", got, want, bindings)
	}
	code, out, _ = execCLI(t, nil, home, "sessions", "show", id)
	if code != 0 || !strings.Contains(out, "bound to acp:") || !strings.Contains(out, "second answer") {
		t.Errorf("sessions show: exit %d\n%s", code, out)
	}
}

// Issue 25: the run's own tools reach Claude Code as an MCP server of ours
// (mcp__agentloop__<tool>): its call of our read tool runs in our
// registry, in the workspace, and our approval judges it by our tool's
// name, so --approve never lets a read through.
func TestE2EHarnessClaudeCodeUsesOurTools(t *testing.T) {
	base := mockLLM(t, "-rounds", "1", "-text", "3", "-tool", "mcp__agentloop__read", "-args", `{"path":"hello.txt"}`)
	home, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("the secret word is plum\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := execCLI(t, claudeEnv(t, base), home, "run", "--harness", "claude-code", "--model", "anthropic/mock-claude",
		"--cwd", ws, "--approve", "never", "read hello.txt")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if m := resultOf(t, home, sessionOf(t, errs), "mcp__agentloop__read"); m != nil && (m.IsError || !strings.Contains(m.Text(), "plum")) {
		t.Errorf("our read tool's result %q (error %v)", m.Text(), m.IsError)
	}
}

// resultOf returns the session's last result of the tool (an error when
// there is none).
func resultOf(t *testing.T, home, id, name string) *llm.Message {
	t.Helper()
	tr, err := session.NewJSONLStore(filepath.Join(home, "sessions")).Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var found *llm.Message
	for _, m := range tr.Context("").Messages {
		if m.Role == llm.RoleToolResult && m.ToolName == name {
			found = &m
		}
	}
	if found == nil {
		t.Errorf("no result of %s in the transcript", name)
	}
	return found
}

// Issue 25: an ACP agent that stalls mid-turn is a visible warning on the
// CLI (AGENTLOOP_ACP_IDLE_WARN shortens the 5-minute default), not a
// silent hang, and the turn still ends with the agent's answer.
func TestE2EHarnessACPIdleWarn(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	script, _ := json.Marshal(fakeacp.Config{Dir: t.TempDir(), Turns: [][]fakeacp.Step{
		{{Text: "thinking "}, {PauseMS: 1500}, {Text: "answer"}}}})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{envFakeACP + "=" + string(script), "ANTHROPIC_API_KEY=sk-unused", "AGENTLOOP_ACP_IDLE_WARN=400ms"}
	code, out, errs := execCLI(t, env, home, "run", "--harness", "acp:"+self, "--model", "anthropic/mock-claude", "--cwd", ws, "hi")
	if code != 0 || !strings.Contains(out, "thinking answer") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Count(errs, "no update and no answer from the agent") != 1 {
		t.Errorf("want one idle warning on stderr:\n%s", errs)
	}
	code, _, errs = execCLI(t, []string{"AGENTLOOP_ACP_IDLE_WARN=soon", "ANTHROPIC_API_KEY=sk-unused"}, home, "run", "--harness", "acp:"+self, "--model", "anthropic/mock-claude", "hi")
	if code == 0 || !strings.Contains(errs, "AGENTLOOP_ACP_IDLE_WARN") {
		t.Errorf("a bad duration: exit %d\n%s", code, errs)
	}
}

// Issue 25: an ACP agent that accepts HTTP MCP servers gets the run's own
// tools in session/new; its call of our read tool runs in our registry, in
// the workspace, under our approval (--approve never lets a read through,
// not a write).
func TestE2EHarnessACPUsesOurTools(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("the secret word is plum\n"), 0o600); err != nil {
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
	code, out, errs := execCLI(t, env, home, "run", "--harness", "acp:"+self, "--model", "anthropic/mock-claude", "--cwd", ws, "--approve", "never", "read hello.txt")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Error("our write tool ran under --approve never")
	}
	msgs, _ := mirrored(t, home, sessionOf(t, errs))
	got := strings.Join(msgs, " | ")
	if !strings.Contains(got, "call:read hello | result:read hello | call:write out | result:write out:error") {
		t.Errorf("transcript %s", got)
	}
	tr, err := session.NewJSONLStore(filepath.Join(home, "sessions")).Load(context.Background(), sessionOf(t, errs))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range tr.Context("").Messages {
		if m.Role == "toolResult" && m.ToolCallID == "r1" && !strings.Contains(m.Text(), "plum") {
			t.Errorf("our read tool's result %q", m.Text())
		}
		if m.Role == "toolResult" && m.ToolCallID == "w1" && !strings.Contains(m.Text(), `approval mode "never"`) {
			t.Errorf("the refused write's result %q does not say our approval refused it", m.Text())
		}
	}
}

// Issue 25: the run's tools that pi has no tool of its own for (here an
// MCP server's tool) reach pi through an extension of ours; pi's call runs
// in our registry, after our approval: allowed it returns the server's
// answer, refused (--approve never: greet is not read-only) it never
// reaches the server.
func TestE2EHarnessPiUsesOurTools(t *testing.T) {
	for _, tc := range []struct {
		approve, want string
		isError       bool
	}{{"auto", "Hello, Ada", false}, {"never", `approval mode "never"`, true}} {
		t.Run(tc.approve, func(t *testing.T) {
			base := mockLLM(t, "-rounds", "1", "-text", "3", "-tool", "mcp__greeter__greet", "-args", `{"name":"Ada"}`)
			home, ws := t.TempDir(), t.TempDir()
			cfg := filepath.Join(t.TempDir(), "mcp.json")
			if err := os.WriteFile(cfg, []byte(greeterServers(t)), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := execCLI(t, piEnv(t, base), home, "run", "--harness", "pi", "--model", "anthropic/mock-claude",
				"--cwd", ws, "--mcp-config", cfg, "--approve", tc.approve, "greet Ada")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			if m := resultOf(t, home, sessionOf(t, errs), "mcp__greeter__greet"); m != nil && (m.IsError != tc.isError || !strings.Contains(m.Text(), tc.want)) {
				t.Errorf("the call's result %q (error %v), want %q (error %v)", m.Text(), m.IsError, tc.want, tc.isError)
			}
		})
	}
}

// Issue 25: an engine's tool call that passes through our approval meets
// the same PreToolUse/PostToolUse command hooks as a built-in call (real
// hook scripts, the same fields); a PreToolUse hook that blocks refuses
// the engine's call, and then no PostToolUse fires.
func TestE2EHarnessACPCommandHooks(t *testing.T) {
	for _, tc := range []struct {
		name, guard, log string
		ran              bool
	}{
		// The hooks know the call as our tool (its kind), not by its
		// title, under Claude Code's name and argument names (file_path,
		// absolute), as for a built-in call.
		{"allowed", "exit 0", "pre Edit e1 notes|post Edit e1", true},
		{"blocked", `echo "notes are read-only" >&2; exit 2`, "pre Edit e1 notes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, ws := t.TempDir(), t.TempDir()
			log := filepath.Join(t.TempDir(), "hooks.log")
			pre := `in=$(cat); printf '%s\n' "$(printf '%s' "$in" | jq -r '["pre", .tool_name, .tool_use_id, (.tool_input.file_path | split("/") | last)] | join(" ")')" >> ` + log + "; " + tc.guard
			post := `printf '%s\n' "$(jq -r '["post", .tool_name, .tool_use_id] | join(" ")')" >> ` + log
			entry := func(cmd string) []any {
				return []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": cmd}}}}
			}
			settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": entry(pre), "PostToolUse": entry(post)}})
			writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), string(settings))
			if _, err := hook.Trust(home, ws); err != nil {
				t.Fatal(err)
			}
			edit := fakeacp.Step{Tool: &fakeacp.Tool{ID: "e1", Title: "edit notes", Kind: "edit", Input: map[string]any{"path": "notes"}, Permission: true, Touch: "notes"}}
			script, _ := json.Marshal(fakeacp.Config{Dir: t.TempDir(), Turns: [][]fakeacp.Step{{edit, {Text: "done"}}}})
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			env := []string{envFakeACP + "=" + string(script), "ANTHROPIC_API_KEY=sk-unused"}
			code, out, errs := execCLI(t, env, home, "run", "--harness", "acp:"+self, "--model", "anthropic/mock-claude", "--cwd", ws, "edit notes")
			if code != 0 || !strings.Contains(out, "done") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			data, _ := os.ReadFile(log)
			if got := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(data)), "\n", " | ")), " "); got != strings.ReplaceAll(tc.log, "|", " | ") {
				t.Errorf("hook log %q, want %q", got, tc.log)
			}
			if _, err := os.Stat(filepath.Join(ws, "notes")); (err == nil) != tc.ran {
				t.Errorf("the edit ran: %v, want %v", err == nil, tc.ran)
			}
		})
	}
}

// Issue 25: deleting a session through the gateway (agentloop serve,
// DELETE /v1/sessions/{id}) deletes the transcript, and with it the
// binding, and the pi session file the session was bound to.
func TestE2EHarnessDeleteForgetsPiSession(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "3")
	env := piEnv(t, base)
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := execCLI(t, env, home, "run", "--harness", "pi", "--model", "anthropic/mock-claude", "--cwd", ws, "hello")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	id := sessionOf(t, errs)
	_, bindings := mirrored(t, home, id)
	if len(bindings) != 1 {
		t.Fatalf("bindings %v", bindings)
	}
	if _, err := os.Stat(bindings[0]); err != nil {
		t.Fatalf("pi's session file: %v", err)
	}
	// A fork carries the binding: deleting it keeps the pi session the
	// original still resumes.
	code, out, errs = execCLI(t, env, home, "run", "--harness", "pi", "--model", "anthropic/mock-claude", "--cwd", ws, "--fork", id, "and more")
	if code != 0 {
		t.Fatalf("fork: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	fork := sessionOf(t, errs)
	_, fb := mirrored(t, home, fork)
	shared := len(fb) > 0 && fb[len(fb)-1] == bindings[0]
	sc := startServe(t, ws, home, env, "--model", "anthropic/mock-claude")
	if code := sc.call(t, "DELETE", "/v1/sessions/"+fork, "", nil, nil); code != http.StatusOK {
		t.Fatalf("delete the fork: %d\n%s", code, sc.stderr)
	}
	if _, err := os.Stat(bindings[0]); shared && err != nil {
		t.Fatalf("deleting the fork took the original's pi session: %v", err)
	}
	if code := sc.call(t, "DELETE", "/v1/sessions/"+id, "", nil, nil); code != http.StatusOK {
		t.Fatalf("delete: %d\n%s", code, sc.stderr)
	}
	if _, err := session.NewJSONLStore(filepath.Join(home, "sessions")).Load(context.Background(), id); err == nil {
		t.Error("our transcript is still there")
	}
	if _, err := os.Stat(bindings[0]); err == nil {
		t.Errorf("pi's session file %s is still there", bindings[0])
	}
}

// Issue 25: a steer reaches pi at its native boundary (rpc `steer`: after
// the running tool, before the next model call): the model's next request
// carries it and the transcript mirrors it once, after the tool's result.
// Driven through the runner with the real pi, as a program that embeds
// agentloop steers a run (Run.Steer).
func TestE2EHarnessPiSteer(t *testing.T) {
	testHarnessSteer(t, 0, false, func(t *testing.T, base string) harness.Harness {
		env := piEnv(t, base)
		cmd, model := "", ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, envPiCommand+"="); ok {
				cmd = v
			}
			if v, ok := strings.CutPrefix(kv, envPiModel+"="); ok {
				model = v
			}
		}
		return pi.New(&pi.Config{Command: cmd, Model: model, Env: append(os.Environ(), env...)})
	})
}

// TestE2EHarnessClaudeCodeSteer steers the real Claude Code while its Bash
// call sleeps: the message reaches the second and last model request of
// the same turn (after the tool's result; no turn of its own follows).
func TestE2EHarnessClaudeCodeSteer(t *testing.T) {
	testHarnessSteer(t, 2, false, claudeSteered)
}

// TestE2EHarnessClaudeCodeSteerAfterLastTool steers the real Claude Code
// once its only tool has finished, while the final answer is slow to come
// (mockllm waits 2 s before each response). Claude Code answers the steer
// in the same turn or in a turn of its own after the result (it did the
// latter when this was written); either way the run waits for that answer
// and mirrors the steer once.
func TestE2EHarnessClaudeCodeSteerAfterLastTool(t *testing.T) {
	testHarnessSteer(t, 0, true, claudeSteered)
}

func claudeSteered(t *testing.T, base string) harness.Harness {
	env := append(os.Environ(), "HOME="+t.TempDir())
	return claudecode.New(&claudecode.Config{Command: claudeCode(t), Env: append(env, claudeEnv(t, base)...)})
}

// testHarnessSteer steers the engine while its tool sleeps (late: once the
// tool has finished, while the answer is slow): the message is in a model
// request after the tool's (want of them, 0: any number), mirrored once,
// after the tool's result, and answered by the run's last message.
func testHarnessSteer(t *testing.T, want int, late bool, engine func(t *testing.T, base string) harness.Harness) {
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	args := []string{"-rounds", "1", "-text", "3", "-cmd", "sleep 2; echo slept", "-capture", capture}
	trigger := agent.EventToolExecutionStart
	if late {
		args = append(args, "-delay", "2s", "-cmd", "echo slept")
		trigger = agent.EventToolExecutionEnd
	}
	base := mockLLM(t, args...)
	h := engine(t, base)
	store := session.NewJSONLStore(t.TempDir())
	rn, err := runner.New(runner.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	m := faux.New(faux.Say("unused"))
	run, err := rn.Start(t.Context(), runner.Request{Prompt: "take a nap", Model: m, Info: m.ModelInfo(), Harness: h,
		Session: runner.SessionSpec{Cwd: t.TempDir()}, OnEvent: func(ev runner.Event) {
			if ev.Type == trigger {
				select {
				case started <- struct{}{}:
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s's tool never reached %s", h.ID(), trigger)
	}
	if !run.Steer("also check the README") {
		t.Errorf("Steer refused a message %s takes mid-turn", h.ID())
	}
	res, err := run.Wait()
	if err != nil || !res.OK() {
		t.Fatalf("%v %+v", err, res)
	}
	reqs, _ := os.ReadFile(capture)
	lines := strings.Split(strings.TrimSpace(string(reqs)), "\n")
	if len(lines) < 2 || (want > 0 && len(lines) != want) || !strings.Contains(lines[len(lines)-1], "also check the README") ||
		strings.Contains(lines[0], "also check the README") {
		t.Errorf("the steer is not in the model request after the tool (%d requests, want %d)", len(lines), want)
	}
	tr, err := store.Load(context.Background(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	msgs := tr.Context("").Messages
	for _, msg := range msgs {
		got = append(got, string(msg.Role)+":"+msg.Text())
	}
	joined := strings.Join(got, " | ")
	if strings.Count(joined, "also check the README") != 1 || !strings.Contains(joined, "slept") ||
		strings.Index(joined, "also check the README") < strings.Index(joined, "slept") {
		t.Errorf("transcript %s: want the steer once, after the tool's result", joined)
	}
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleAssistant || last.Text() == "" || !strings.HasPrefix(got[len(got)-2], "user:also check") {
		t.Errorf("transcript %s: want it to end with the answer that follows the steer", joined)
	}
	t.Logf("transcript: %s (%d model requests)", joined, len(lines))
}
