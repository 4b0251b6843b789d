package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 17: attacks on the built binary, driven through mockllm's real
// wire, each checking what reached the disk or the model.

// runBuilt runs the built agentloop against mockllm at base with env (on
// top of a minimal environment) and returns its exit code, stdout and
// stderr.
func runBuilt(t *testing.T, env []string, home, ws, base string, args ...string) (int, string, string) {
	t.Helper()
	all := append([]string{"run", "--model", "openai/mock-model", "--base-url", base + "/v1", "--cwd", ws}, args...)
	return execCLI(t, env, home, all...)
}

// Issue 17, item 1: under --approve never, commands that write or
// execute through option abbreviations, sed scripts or printf -v are
// refused, and the workspace stays as it was.
func TestE2EApproveNeverRefusesWrites(t *testing.T) {
	for _, c := range []struct{ cmd, created string }{
		{`sed --in s/a/b/ f`, ""},
		{`sed --in-pl=.bak s/a/b/ f`, "f.bak"},
		{`sort --out=F f`, "F"},
		{`sed --expr=1etouch\ PWN p f`, "PWN"},
		{`sed -n 'w W' f`, "W"},
		{`printf -v PATH ./bin; ls`, ""},
		// bash splits an unquoted $LANG into words: sed -i, sort -o, sed's e.
		{`LANG=' -i'; sed -e s/^/X/ f$LANG`, ""},
		{`X=' -i'; sed -e s/^/X/ f$X`, ""},
		{`LANG=' -o PWN1'; sort /dev/null$LANG`, "PWN1"},
		{`TZ=' -o PWN1'; sort /dev/null${TZ}`, "PWN1"},
		{`LANG=' -e e'; echo 'touch PWN2' | sed -n -e p /dev/stdin$LANG`, "PWN2"},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "requests.jsonl")
			base := mockLLM(t, "-rounds", "1", "-cmd", c.cmd, "-capture", capture)
			home, ws := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(ws, "f"), "a\n")
			code, _, errs := runBuilt(t, []string{"OPENAI_API_KEY=sk-mock"}, home, ws, base, "--no-session", "--approve", "never", "go")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			if data, _ := os.ReadFile(filepath.Join(ws, "f")); string(data) != "a\n" {
				t.Errorf("f was changed to %q", data)
			}
			if c.created != "" {
				if _, err := os.Lstat(filepath.Join(ws, c.created)); err == nil {
					t.Errorf("%s was created", c.created)
				}
			}
			reqs := readLines(t, capture)
			if len(reqs) != 2 || !strings.Contains(reqs[1], "never") {
				t.Errorf("the model was not told the call was refused; requests:\n%s", strings.Join(reqs, "\n"))
			}
		})
	}
}

// Review finding 5: bash opens /dev/tcp/HOST/PORT in a redirection as a
// socket, so under --approve never `cat < /dev/tcp/...` is refused and
// no connection reaches the listener.
func TestE2EApproveNeverRefusesDevTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan bool, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	port := l.Addr().(*net.TCPAddr).Port
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "1", "-cmd", fmt.Sprintf("cat < /dev/tcp/127.0.0.1/%d", port), "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	code, _, errs := runBuilt(t, []string{"OPENAI_API_KEY=sk-mock"}, home, ws, base, "--no-session", "--approve", "never", "go")
	l.Close()
	if <-accepted {
		t.Error("the command connected to the listener")
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if reqs := readLines(t, capture); len(reqs) != 2 || !strings.Contains(reqs[1], "never") {
		t.Errorf("the model was not told the call was refused; %d requests", len(reqs))
	}
}

// Issue 17, item 4: with provider keys in agentloop's environment, the
// model runs printenv: no key reaches the transcript or the next request,
// nor does a variable the user's deny list names; the allow list keeps
// one; and a hook still gets the environment Claude Code gives hooks.
func TestE2EPrintenvHoldsNoSecrets(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "1", "-cmd", "printenv", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	hookOut := filepath.Join(ws, "hook-env.txt")
	settings := `{"toolEnv": {"deny": ["CUSTOM_CRED"], "allow": ["HARMLESS_TOKEN"]},
	 "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "printenv OPENAI_API_KEY > ` + hookOut + `; exit 0"}]}]}}`
	writeFile(t, filepath.Join(home, "settings.json"), settings)
	const key = "sk-e2e-openai-9f8e7d6c5b4a"
	env := []string{"OPENAI_API_KEY=" + key, "ANTHROPIC_API_KEY=sk-ant-e2e-1234567890", "GITHUB_TOKEN=ghp_e2e_abcdef",
		"CUSTOM_CRED=custom-e2e-secret", "HARMLESS_TOKEN=harmless-e2e-value"}
	reqs, transcripts := runPrintenv(t, env, home, ws, base, capture)
	if !strings.Contains(reqs[1], "harmless-e2e-value") {
		t.Fatalf("printenv's output did not reach the model (so the test proves nothing):\n%s", reqs[1])
	}
	for _, secret := range []string{key, "sk-ant-e2e", "ghp_e2e", "custom-e2e-secret"} {
		if strings.Contains(reqs[1], secret) {
			t.Errorf("the request to the model holds %q", secret)
		}
	}
	for _, p := range transcripts {
		data, _ := os.ReadFile(p)
		if bytes.Contains(data, []byte(key)) {
			t.Errorf("the transcript %s holds the key", p)
		}
	}
	if data, err := os.ReadFile(hookOut); err != nil || strings.TrimSpace(string(data)) != key {
		t.Errorf("the hook did not get the environment as Claude Code gives it: %q, %v", data, err)
	}
}

// runPrintenv runs the built CLI against mockllm scripted to run
// printenv (base, capturing to capture), with a session, and returns the
// captured requests (two: the prompt, then printenv's output, which holds
// AGENTLOOP_E2E_PLAIN's value) and the transcripts written.
func runPrintenv(t *testing.T, env []string, home, ws, base, capture string) (reqs, transcripts []string) {
	t.Helper()
	env = append(env, "AGENTLOOP_E2E_PLAIN=plain-e2e-value")
	code, _, errs := runBuilt(t, env, home, ws, base, "--session-dir", filepath.Join(home, "sessions"), "show the environment")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	reqs = readLines(t, capture)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if !strings.Contains(reqs[1], "plain-e2e-value") {
		t.Fatalf("printenv's output did not reach the model (so the test proves nothing):\n%s", reqs[1])
	}
	transcripts, _ = filepath.Glob(filepath.Join(home, "sessions", "*", "*.jsonl"))
	more, _ := filepath.Glob(filepath.Join(home, "sessions", "*.jsonl"))
	transcripts = append(transcripts, more...)
	if len(transcripts) == 0 {
		t.Fatal("no transcript was written")
	}
	return reqs, transcripts
}

// Issue 17, item 8: a file that starts with a byte-order mark is read as
// text through the CLI, not refused as binary.
func TestE2EReadByteOrderMarkFile(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "1", "-tool", "read", "-args", `{"path":"notes.txt"}`, "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	utf16 := []byte{0xFF, 0xFE}
	for _, r := range "bom-marked notes\r\n" {
		utf16 = append(utf16, byte(r), 0)
	}
	writeFile(t, filepath.Join(ws, "notes.txt"), string(utf16))
	code, _, errs := runBuilt(t, []string{"OPENAI_API_KEY=sk-mock"}, home, ws, base, "--no-session", "read the notes")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	reqs := readLines(t, capture)
	if len(reqs) != 2 || !strings.Contains(reqs[1], `"bom-marked notes"`) {
		t.Errorf("the model did not get the text of the file; requests:\n%s", strings.Join(reqs, "\n"))
	}
}

// spillPath finds the path of the full-output file in a request.
var spillPathRE = regexp.MustCompile(`Full output: (/[^"\s\\]+\.log)`)

// Issue 17, item 8: bash's spill logs live beside the session's
// transcript (mode 0600 in a 0700 directory), not in one directory every
// workspace can read; without a session they go at exit; and a run in
// another workspace cannot read them.
func TestE2ESpillLogsStayWithTheSession(t *testing.T) {
	long := `seq 1 30000`
	home := t.TempDir()
	sessions := filepath.Join(home, "sessions")

	// A run with a session: the log is beside the transcript.
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "1", "-cmd", long, "-capture", capture)
	ws1 := t.TempDir()
	if code, _, errs := runBuilt(t, []string{"OPENAI_API_KEY=sk-mock"}, home, ws1, base, "--session-dir", sessions, "count"); code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := spillPathRE.FindStringSubmatch(strings.Join(readLines(t, capture), "\n"))
	if m == nil {
		t.Fatal("the model was not given a full-output path")
	}
	logPath := m[1]
	transcripts, _ := filepath.Glob(filepath.Join(sessions, "*", "*.jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("transcripts: %v", transcripts)
	}
	if want := strings.TrimSuffix(transcripts[0], ".jsonl") + ".spill"; filepath.Dir(logPath) != want {
		t.Errorf("the log is at %s, want it in %s", logPath, want)
	}
	if fi, err := os.Stat(logPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log %s: %v, %v; want mode 0600", logPath, fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(logPath)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("spill directory: %v, %v; want mode 0700", fi, err)
	}
	if _, err := os.Stat(filepath.Join(home, "spill")); err == nil {
		t.Error("a shared spill directory was created under AGENTLOOP_HOME")
	}

	// Another workspace's run cannot read that log.
	capture2 := filepath.Join(t.TempDir(), "requests.jsonl")
	base2 := mockLLM(t, "-rounds", "1", "-tool", "read", "-args", `{"path":"`+logPath+`"}`, "-capture", capture2)
	ws2 := t.TempDir()
	if code, _, errs := runBuilt(t, []string{"OPENAI_API_KEY=sk-mock"}, home, ws2, base2, "--session-dir", sessions, "peek"); code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	reqs := readLines(t, capture2)
	if len(reqs) != 2 || strings.Contains(reqs[1], "29999") || !strings.Contains(reqs[1], "outside the workspace") {
		t.Errorf("another workspace read the spill log; its second request:\n%s", tail(reqs[len(reqs)-1], 2000))
	}

	// --no-session: the log is gone when the run ends.
	capture3 := filepath.Join(t.TempDir(), "requests.jsonl")
	base3 := mockLLM(t, "-rounds", "1", "-cmd", long, "-capture", capture3)
	if code, _, errs := runBuilt(t, []string{"OPENAI_API_KEY=sk-mock"}, home, ws1, base3, "--no-session", "count"); code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m = spillPathRE.FindStringSubmatch(strings.Join(readLines(t, capture3), "\n"))
	if m == nil {
		t.Fatal("the model was not given a full-output path")
	}
	if _, err := os.Stat(m[1]); err == nil {
		t.Errorf("the spill log %s of a --no-session run outlived it", m[1])
	}
	if _, err := os.Stat(filepath.Dir(m[1])); err == nil {
		t.Errorf("the spill directory %s of a --no-session run outlived it", filepath.Dir(m[1]))
	}
}

// Issue 17, item 2: under --sandbox, a host Unix socket is out of sight
// unless settings.json lists it in sandbox.sockets.
func TestE2ESandboxHostSockets(t *testing.T) {
	tag := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var socks []string
	for _, name := range []string{"allowed", "hidden"} {
		p := filepath.Join("/var/tmp", "agentloop-e2e-"+name+"-"+tag+".sock")
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Skipf("cannot make a socket in /var/tmp: %v", err)
		}
		t.Cleanup(func() { l.Close(); os.Remove(p) })
		socks = append(socks, p)
	}
	probe := fmt.Sprintf(`for s in %s %s; do if [ -S "$s" ]; then echo "visible $s"; else echo "hidden $s"; fi; done`, socks[0], socks[1])
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "1", "-cmd", probe, "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, "settings.json"), `{"sandbox": {"sockets": ["`+socks[0]+`"]}}`)
	code, _, errs := runBuilt(t, []string{"OPENAI_API_KEY=sk-mock"}, home, ws, base, "--no-session", "--sandbox", "look")
	if code != 0 && strings.Contains(errs, "--sandbox:") {
		t.Skipf("no sandbox here: %s", errs)
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	reqs := readLines(t, capture)
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, want := range []string{"visible " + socks[0], "hidden " + socks[1]} {
		if !strings.Contains(reqs[1], want) {
			t.Errorf("the sandboxed command's output lacks %q:\n%s", want, tail(reqs[1], 1500))
		}
	}
}
