package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tmuxPane is a shell in a detached tmux session on a private server: a
// real terminal whose screen the test reads.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func newTmuxPane(t *testing.T) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it): the status line needs a real terminal to be seen")
	}
	// A socket path of its own (short: unix sockets allow ~100 bytes), so
	// tests running at the same time never share a server.
	dir, err := os.MkdirTemp("", "tmx")
	if err != nil {
		t.Fatal(err)
	}
	p := &tmuxPane{t: t, sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	p.tmux("new-session", "-d", "-x", "120", "-y", "30", "bash --norc --noprofile")
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// typeLine types a command line into the shell, as a user would.
func (p *tmuxPane) typeLine(line string) {
	p.tmux("send-keys", "-l", line)
	p.tmux("send-keys", "Enter")
}

func (p *tmuxPane) screen() string { return p.tmux("capture-pane", "-p") }

// waitFor polls the screen until ok says yes, and returns every distinct
// screen seen on the way; it fails after d.
func (p *tmuxPane) waitFor(d time.Duration, what string, ok func(string) bool) []string {
	p.t.Helper()
	var seen []string
	deadline := time.Now().Add(d)
	for {
		s := p.screen()
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		if ok(s) {
			return seen
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s on the screen after %v:\n%s", what, d, s)
		}
		time.Sleep(50 * time.Millisecond) // polling another process's screen
	}
}

// statusRe matches the status line as the terminal shows it.
var statusRe = regexp.MustCompile(`(?m)^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (waiting for the model|thinking|running \S+)( \(\+\d+ more\))? · \d+s`)

// statusScript writes a script that runs the built CLI against base with
// args, and marks its end with a line the test waits for.
func statusScript(t *testing.T, base string, redirect string, args ...string) string {
	t.Helper()
	home, ws := t.TempDir(), t.TempDir()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	cmd := []string{q(builtCLI(t)), "run", "--model", "openai/mock-model", "--base-url", q(base + "/v1"), "--cwd", q(ws), "--no-session"}
	for _, a := range args {
		cmd = append(cmd, q(a))
	}
	// The models file silences the "not in the registry" warning, so
	// the screen holds only what this test is about.
	models := filepath.Join(home, "models.json")
	if err := os.WriteFile(models, []byte(`{"providers":{"openai":{"models":[{"id":"mock-model","contextWindow":128000,"maxTokens":4096}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "run.sh")
	body := fmt.Sprintf("export HOME=%s AGENTLOOP_HOME=%s OPENAI_API_KEY=sk-mock TERM=xterm-256color\nclear\n%s %s\necho \"== exit $?\"\n",
		q(home), q(home), strings.Join(cmd, " "), redirect)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// Issue 21 item 6: in a real terminal, the status line shows while the
// model takes its time and while a tool runs over a second, and is gone
// once the reply is there; no line of the run is mixed with it.
func TestE2EStatusLineInTerminal(t *testing.T) {
	pane := newTmuxPane(t)
	base := mockLLM(t, "-rounds", "1", "-delay", "3s", "-cmd", "sleep 2", "-text", "3")
	pane.typeLine("sh " + statusScript(t, base, "", "hi"))

	seen := pane.waitFor(2500*time.Millisecond, "status line while the model is silent", func(s string) bool {
		return strings.Contains(s, "waiting for the model · 1s")
	})
	if !statusRe.MatchString(seen[len(seen)-1]) {
		t.Fatalf("the status line is not on a line of its own:\n%s", seen[len(seen)-1])
	}
	seen = pane.waitFor(6*time.Second, "status line while bash sleeps", func(s string) bool {
		return strings.Contains(s, "running bash · 1s")
	})
	if s := seen[len(seen)-1]; !strings.Contains(s, "→ bash {\"command\":\"sleep 2\"}\n") {
		t.Fatalf("the tool's line is not whole above the status:\n%s", s)
	}
	seen = append(seen, pane.waitFor(10*time.Second, "end of the run", func(s string) bool { return strings.Contains(s, "== exit") })...)
	final := seen[len(seen)-1]
	if statusRe.MatchString(final) || strings.Contains(final, "waiting for") || strings.Contains(final, "running bash") {
		t.Fatalf("the status line is left on the screen:\n%s", final)
	}
	if !strings.Contains(final, "== exit 0") || !strings.Contains(final, "word word done\n") || !strings.Contains(final, "usage: 2 turns, 1 tool calls") {
		t.Fatalf("the reply is not there:\n%s", final)
	}
	// The second wait for the model was shown too, and at no moment did a
	// status share its line with other text.
	waits := 0
	for _, s := range seen {
		for line := range strings.Lines(s) {
			if strings.Contains(line, "waiting for the model") || strings.Contains(line, "running bash") {
				if !statusRe.MatchString(line) || strings.Count(line, "·") > 2 {
					t.Fatalf("a status mixed with other text: %q in\n%s", line, s)
				}
			}
		}
		if strings.Contains(s, "→ bash") && strings.Contains(s, "waiting for the model") {
			waits++
		}
	}
	if waits == 0 {
		t.Errorf("no status while waiting for the model's second reply; screens seen:\n%s", strings.Join(seen, "\n----\n"))
	}
}

// Issue 21 item 6: with stderr sent to a file (stdout still the terminal)
// or with --json, nothing of the status is written.
func TestE2EStatusLineOffWhenStderrIsNotATerminal(t *testing.T) {
	pane := newTmuxPane(t)
	base := mockLLM(t, "-rounds", "1", "-delay", "1500ms", "-cmd", "sleep 1.5", "-text", "3")
	errFile := filepath.Join(t.TempDir(), "stderr")
	pane.typeLine("sh " + statusScript(t, base, "2>"+errFile, "hi"))
	seen := pane.waitFor(15*time.Second, "end of the run", func(s string) bool { return strings.Contains(s, "== exit") })
	for _, s := range seen {
		if statusRe.MatchString(s) {
			t.Fatalf("a status line with stderr in a file:\n%s", s)
		}
	}
	b, err := os.ReadFile(errFile)
	if err != nil {
		t.Fatal(err)
	}
	errs := string(b)
	if !strings.Contains(errs, "→ bash") || !strings.Contains(errs, "usage:") {
		t.Fatalf("stderr is not the run's: %q", errs)
	}
	if strings.ContainsAny(errs, "\r\x1b") || strings.ContainsAny(errs, strings.Join(spinnerFrames, "")) {
		t.Fatalf("status bytes on a stderr that is not a terminal: %q", errs)
	}

	// --json, stderr the terminal: still nothing.
	pane.tmux("send-keys", "clear", "Enter")
	pane.typeLine("sh " + statusScript(t, base, ">/dev/null", "--json", "hi"))
	seen = pane.waitFor(15*time.Second, "end of the --json run", func(s string) bool { return strings.Contains(s, "== exit") })
	for _, s := range seen {
		if statusRe.MatchString(s) {
			t.Fatalf("a status line with --json:\n%s", s)
		}
	}
}

// Piped, as scripts and CI run it: stdout and stderr are pipes, and
// neither carries a byte of the status.
func TestE2EStatusLineOffInPipes(t *testing.T) {
	base := mockLLM(t, "-rounds", "1", "-delay", "1500ms", "-cmd", "sleep 1.5", "-text", "3")
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := execCLI(t, []string{"OPENAI_API_KEY=sk-mock", "TERM=xterm-256color"}, home,
		"run", "--model", "openai/mock-model", "--base-url", base+"/v1", "--cwd", ws, "--no-session", "hi")
	if code != 0 || !strings.Contains(out, "done") || !strings.Contains(errs, "→ bash") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
	if strings.ContainsAny(out+errs, "\r\x1b") || strings.ContainsAny(errs, strings.Join(spinnerFrames, "")) {
		t.Fatalf("status bytes in pipes:\nstdout %q\nstderr %q", out, errs)
	}
}

// A question on the terminal (--approve ask) is not drawn over: the status
// stays away from a line the user is answering.
func TestE2EStatusLineLeavesAQuestionAlone(t *testing.T) {
	pane := newTmuxPane(t)
	base := mockLLM(t, "-rounds", "1", "-delay", "1s", "-cmd", "touch made-by-the-agent", "-text", "3")
	pane.typeLine("sh " + statusScript(t, base, "", "--approve", "ask", "hi"))
	pane.waitFor(5*time.Second, "approval question", func(s string) bool { return strings.Contains(s, "Allow? [y]es") })
	// Long enough for a tool status (over a second) and many redraws.
	time.Sleep(1500 * time.Millisecond) // the question waits for a person
	s := pane.screen()
	if statusRe.MatchString(s) || !regexp.MustCompile(`(?m)^Allow\? \[y\]es, \[n\]o, \[a\]lways allow bash in this run: *$`).MatchString(s) {
		t.Fatalf("the question is not left alone:\n%s", s)
	}
	pane.typeLine("y")
	final := pane.waitFor(10*time.Second, "end of the run", func(s string) bool { return strings.Contains(s, "== exit") })
	if s := final[len(final)-1]; !strings.Contains(s, "== exit 0") || !strings.Contains(s, "word word done") || statusRe.MatchString(s) {
		t.Fatalf("after the answer:\n%s", s)
	}
}
