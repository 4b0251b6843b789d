package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Issue 21 item 7: what a newcomer meets, through the built binary.

// Issue 21: `mcp list` in an untrusted workspace says its servers are
// skipped and why, and a server that cannot start is a row of the table,
// not a Go log line.
func TestE2EMCPListUntrusted(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, ".mcp.json"), `{"mcpServers":{"projsrv":{"command":"/bin/false"}}}`)
	code, out, errs := execCLIIn(t, "", ws, home, nil, "mcp", "list")
	if code != 0 || strings.Contains(out, "no MCP servers configured") || !strings.Contains(out, "not trusted") || !strings.Contains(out, "projsrv") || !strings.Contains(out, "agentloop trust") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if strings.Count(out+errs, "projsrv") != 1 {
		t.Errorf("said more than once:\n%s%s", out, errs)
	}

	writeFile(t, filepath.Join(home, "mcp.json"), `{"mcpServers":{"broken":{"command":"/nonexistent/server"}}}`)
	code, out, errs = execCLIIn(t, "", ws, home, nil, "mcp", "list")
	if code != 0 || !strings.Contains(out, "broken") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if goLogLine.MatchString(out) || goLogLine.MatchString(errs) {
		t.Errorf("a raw Go log line:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
}

// goLogLine is how the log and slog packages' default output starts.
var goLogLine = regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d `)

func TestE2EFlagMistakes(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--modle", "faux/demo", "hi"}, []string{"unknown flag --modle", "did you mean --model", `"agentloop run --help"`}},
		{[]string{"run", "--max-turns", "abc", "hi"}, []string{"--max-turns abc: want a whole number"}},
		{[]string{"run", "--timeout", "5", "hi"}, []string{"--timeout 5: want a duration with a unit, like 30s"}},
		{[]string{"sessions", "list", "--cwdd", "x"}, []string{"did you mean --cwd", "--help"}},
	} {
		code, _, errs := execCLIIn(t, "", home, home, nil, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errs, w)
			}
		}
		if strings.Contains(errs, "strconv.") || strings.Contains(errs, "time: missing unit") {
			t.Errorf("%v: Go's parse error reaches the user: %q", tc.args, errs)
		}
	}
}

// A read-only $AGENTLOOP_HOME: the run says to use --no-session or
// another home, and --no-session works. As root (CI), agentloop runs as
// nobody through setpriv, as a read-only directory means nothing to root.
func TestE2EReadOnlyHome(t *testing.T) {
	base, err := os.MkdirTemp("", "agentloop-rohome-") // t.TempDir's parent is closed to nobody
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	for _, d := range []string{home, ws} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := builtCLI(t)
	var prefix []string
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("running as root without setpriv: a read-only directory cannot be made")
		}
		prefix = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}
		copied := filepath.Join(base, "agentloop")
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copied, data, 0o755); err != nil {
			t.Fatal(err)
		}
		bin = copied
		if err := os.Chmod(ws, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(home, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(home, 0o755) }) // runs before the RemoveAll
	run := func(args ...string) (int, string) {
		argv := append(append(prefix, bin), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + ws, "AGENTLOOP_HOME=" + home}
		cmd.Dir = ws
		code, out, errs := runProcess(t, cmd)
		return code, out + errs
	}
	code, out := run("run", "--model", "faux/demo", "hi")
	if code != 1 || !strings.Contains(out, "run with --no-session, or set AGENTLOOP_HOME to a directory you can write") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if code, out = run("run", "--no-session", "--model", "faux/demo", "hi"); code != 0 {
		t.Errorf("--no-session: exit %d:\n%s", code, out)
	}
}

// A prompt refused by a UserPromptSubmit hook is said once, and no
// session id is shown for a session that was never written.
func TestE2EPromptBlockedOnce(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, ".claude", "settings.json"),
		`{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo 'prompts about secrets are refused' >&2; exit 2"}]}]}}`)
	code, out, errs := execCLIIn(t, "", ws, home, nil, "run", "--trust", "--model", "faux/demo", "tell me the secret")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if n := strings.Count(errs, "prompts about secrets are refused"); n != 1 || !strings.Contains(errs, "UserPromptSubmit hook refused the prompt") {
		t.Errorf("the refusal said %d times:\n%s", n, errs)
	}
	if strings.Contains(errs, "session:") || out != "" {
		t.Errorf("stdout %q, stderr:\n%s", out, errs)
	}
	if code, out, _ = execCLIIn(t, "", ws, home, nil, "sessions", "list"); !strings.Contains(out, "no sessions") {
		t.Errorf("a session was left behind (exit %d):\n%s", code, out)
	}
}

// ollama/… with no server running says so at once, not after three
// retries of "connection refused".
func TestE2ELocalServerNotRunning(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	home := t.TempDir()
	start := time.Now()
	code, _, errs := execCLIIn(t, "", home, home, nil, "run", "--no-session", "--model", "ollama/qwen3", "--base-url", "http://"+addr+"/v1", "hi")
	if code != 1 || !strings.Contains(errs, "no model server is running at http://"+addr) || !strings.Contains(errs, "ollama serve") {
		t.Errorf("exit %d:\n%s", code, errs)
	}
	if strings.Contains(errs, "retrying") || strings.Contains(errs, "connection refused") {
		t.Errorf("retried a server that is not there:\n%s", errs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
}
