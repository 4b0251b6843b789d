package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/session"
)

// End-to-end tests of `agentloop run` through the runner: in-process
// (execute) against faux scripts, and against the scripted server of
// ../shared/bench/mockllm, built into a temporary directory.

var (
	mockOnce sync.Once
	mockBin  string
	mockErr  error
	mockDir  string
)

// mockLLM starts mockllm with args on a free port and returns its base
// URL (the OpenAI wire's /v1). It skips the test when mockllm cannot be built.
func mockLLM(t *testing.T, args ...string) string {
	t.Helper()
	mockOnce.Do(func() {
		// shared/ lies beside the checkout; tests run in cmd/agentloop.
		src := filepath.Join("..", "..", "..", "shared", "bench", "mockllm")
		if d := os.Getenv("AGENTLOOP_MOCKLLM_SRC"); d != "" {
			src = d
		}
		mockDir, mockErr = os.MkdirTemp("", "agentloop-mockllm-")
		if mockErr != nil {
			return
		}
		mockBin = filepath.Join(mockDir, "mockllm")
		cmd := exec.Command("go", "build", "-o", mockBin, ".")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			mockErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if mockErr != nil && os.Getenv("CI") != "" {
		t.Fatalf("mockllm cannot be built in CI, where shared/ lies beside the checkout: %v", mockErr)
	}
	if mockErr != nil {
		t.Skipf("mockllm cannot be built from shared/bench/mockllm beside the checkout (set AGENTLOOP_MOCKLLM_SRC to its directory) (%v): skipping the test against the scripted server", mockErr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(mockBin, append([]string{"-addr", addr}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/stats")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i > 200 {
			t.Fatalf("mockllm did not come up: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling a child process's port
	}
	return "http://" + addr
}

// mockStats reads mockllm's request counters.
func mockStats(t *testing.T, base string) map[string]int64 {
	t.Helper()
	resp, err := http.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st map[string]int64
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st
}

// cliEnvWith is testEnv with extra variables.
func cliEnvWith(home string, vars map[string]string) (*cliEnv, *strings.Builder, *strings.Builder) {
	env, _, _ := testEnv(home, "")
	var out, errb strings.Builder
	env.stdout, env.stderr = &syncWriter{w: &out}, &syncWriter{w: &errb}
	env.getenv = func(k string) string {
		if k == "AGENTLOOP_HOME" {
			return home
		}
		return vars[k]
	}
	env.lookupEnv = func(k string) (string, bool) {
		v := env.getenv(k)
		return v, v != ""
	}
	return env, &out, &errb
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// runMock runs `agentloop run` in-process against mockllm at base.
func runMock(t *testing.T, home, ws, base string, args ...string) (int, string, string) {
	t.Helper()
	env, out, errb := cliEnvWith(home, map[string]string{"OPENAI_API_KEY": "sk-mock"})
	all := append([]string{"run", "--model", "openai/mock-model", "--base-url", base + "/v1", "--cwd", ws}, args...)
	code := execute(context.Background(), env, all)
	return code, out.String(), errb.String()
}

// Issue 10: two 529s are retried through, one stderr line each.
func TestE2ERetries529(t *testing.T) {
	base := mockLLM(t, "-rounds", "1", "-failfirst", "2", "-failstatus", "529")
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := runMock(t, home, ws, base, "--no-session", "--retry-base", "10ms", "run echo")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if n := strings.Count(errs, "agentloop: the model is overloaded: retrying in"); n != 2 {
		t.Errorf("%d retry lines, want 2:\n%s", n, errs)
	}
	if !strings.Contains(out, "done") || !strings.Contains(errs, "2 retries") {
		t.Errorf("stdout %q, stderr:\n%s", out, errs)
	}
}

// Issue 10: --json shows the retries as events.
func TestE2ERetryEventsJSON(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-failfirst", "1", "-failstatus", "500")
	code, out, errs := runMock(t, t.TempDir(), t.TempDir(), base, "--no-session", "--json", "--retry-base", "10ms", "hi")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var retry struct {
		Reason  string `json:"reason"`
		DelayMs int64  `json:"delayMs"`
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, `"type":"retry"`) {
			found = true
			if err := json.Unmarshal([]byte(line), &retry); err != nil || retry.Reason != "server" || retry.DelayMs < 10 || retry.DelayMs > 13 {
				t.Errorf("retry event %s", line)
			}
		}
	}
	if !found {
		t.Errorf("no retry event in:\n%s", out)
	}
}

// writeModels declares mock-model with a context window in a models.json.
func writeModels(t *testing.T, home string, window int) {
	writeFile(t, filepath.Join(home, "models.json"), fmt.Sprintf(
		`{"providers": {"openai": {"models": [{"id": "mock-model", "contextWindow": %d, "maxTokens": 4096}]}}}`, window))
}

// Issue 10: an overflow from -ctxlimit is compacted and the call retried.
func TestE2EOverflowCompacted(t *testing.T) {
	base := mockLLM(t, "-rounds", "14", "-cmd", `head -c 10000 /dev/zero | tr '\0' x`, "-ctxlimit", "110000")
	home, ws := t.TempDir(), t.TempDir()
	writeModels(t, home, 64_000)
	code, _, errs := runMock(t, home, ws, base, "--max-turns", "60", "run echo")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "context overflow: compacting and retrying (1/3)") {
		t.Errorf("no compaction retry line:\n%s", errs)
	}
	if st := mockStats(t, base); st["max_body"] > 110_000+20_000 {
		t.Logf("stats %v", st)
	}
}

// Issue 9: a 40-round session with 20 KB tool outputs on a 32K model
// declared in models.json finishes against a server that enforces the window.
func TestE2ELongSessionSmallWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	base := mockLLM(t, "-rounds", "40", "-cmd", `head -c 20000 /dev/zero | tr '\0' x`, "-ctxlimit", "128000")
	home, ws := t.TempDir(), t.TempDir()
	writeModels(t, home, 32_000)
	// The scripted server repeats one command 40 times, which loop detection
	// rightly calls a loop; this test is about the context budget.
	code, out, errs := runMock(t, home, ws, base, "--max-turns", "200", "--no-loop-detection", "run echo")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr (tail) %s", code, out, tail(errs, 3000))
	}
	if strings.Contains(errs, "too large for the model") {
		t.Errorf("the run hit an overflow it could not recover from")
	}
	st := mockStats(t, base)
	if !strings.Contains(errs, "40 tool calls") || st["max_body"] > 128_000 {
		t.Errorf("stats %v; stderr tail:\n%s", st, tail(errs, 600))
	}
	t.Logf("mockllm: %v; %s", st, tail(errs, 200))
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Issue 8: a read-only command starts while the model keeps its message
// open, so three rounds of a 1 s tail and a 1 s command take about 3 s, not
// 6 s, on both wires: Anthropic ends a call with content_block_stop, Chat
// Completions as soon as its arguments form a complete object.
func TestE2EToolsOverlapStream(t *testing.T) {
	wires := []struct {
		name string
		env  func(base string) map[string]string
		args func(base string) []string
	}{
		{"anthropic",
			func(base string) map[string]string {
				return map[string]string{"ANTHROPIC_API_KEY": "sk-mock", "ANTHROPIC_BASE_URL": base}
			},
			func(string) []string { return []string{"--model", "anthropic/mock-claude"} }},
		{"openai",
			func(string) map[string]string { return map[string]string{"OPENAI_API_KEY": "sk-mock"} },
			func(base string) []string {
				return []string{"--model", "openai/mock-model", "--base-url", base + "/v1"}
			}},
	}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			base := mockLLM(t, "-rounds", "3", "-taildelay", "1s", "-cmd", "sleep 1")
			env, _, errb := cliEnvWith(t.TempDir(), w.env(base))
			start := time.Now()
			args := append([]string{"run", "--no-session", "--cwd", t.TempDir()}, w.args(base)...)
			code := execute(context.Background(), env, append(args, "run sleep"))
			errs := errb.String()
			took := time.Since(start)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			if took >= 5*time.Second {
				t.Errorf("3 rounds took %s: the commands did not overlap the stream (want < 5 s)", took)
			}
		})
	}
}

// Issue 4: in a trusted workspace a PreToolUse hook written for Claude
// Code blocks rm -rf, and the model is told why (in its next request).
func TestE2EPreToolUseHookBlocks(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "1", "-cmd", "rm -rf build", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeGuard(t, ws)
	if _, err := hook.Trust(home, ws); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runMock(t, home, ws, base, "--no-session", "clean up")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err != nil {
		t.Errorf("the hook did not stop rm -rf: %v", err)
	}
	reqs := readLines(t, capture)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if !strings.Contains(reqs[1], "destructive command refused by policy") {
		t.Errorf("the model was not told why; its second request:\n%s", reqs[1])
	}
}

// writeGuard writes a project PreToolUse hook in Claude Code's format.
func writeGuard(t *testing.T, ws string) {
	guard := `cmd=$(jq -r '.tool_input.command'); case "$cmd" in *"rm -rf"*) echo "destructive command refused by policy: $cmd" >&2; exit 2;; esac; exit 0`
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": guard}}}}}})
	writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), string(settings))
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// Issue 4: the same project hook in an untrusted workspace is skipped
// with the warning, and the command runs.
func TestE2EUntrustedHookSkipped(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeGuard(t, ws)
	if err := os.MkdirAll(filepath.Join(ws, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"),
		`{"steps":[{"toolCalls":[{"name":"bash","arguments":{"command":"rm -rf build"}}]},{"text":"cleaned"}]}`)
	env, _, _ := cliEnvWith(home, nil)
	var errb strings.Builder
	env.stderr = &syncWriter{w: &errb}
	code := execute(context.Background(), env, []string{"run", "--no-session", "--script", script, "--cwd", ws, "clean"})
	errs := errb.String()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "not trusted") || !strings.Contains(errs, "PreToolUse") {
		t.Errorf("no warning listing the skipped hook:\n%s", errs)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); !os.IsNotExist(err) {
		t.Errorf("the skipped hook still blocked the command")
	}
}

// Issue 4: a Stop hook that blocks once makes the run continue exactly once.
func TestE2EStopHookContinuesOnce(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	stop := `if [ "$(jq -r '.stop_hook_active')" = "true" ]; then exit 0; fi; echo "also write DONE.txt" >&2; exit 2`
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"Stop": []any{map[string]any{
		"hooks": []any{map[string]any{"type": "command", "command": stop}}}}}})
	writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), string(settings))
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"),
		`{"steps":[{"text":"first answer"},{"text":"second answer"},{"text":"third answer"}]}`)
	env, out, errb := cliEnvWith(home, nil)
	code := execute(context.Background(), env, []string{"run", "--trust", "--script", script, "--cwd", ws, "go"})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(out.String(), "second answer") || strings.Contains(out.String(), "third answer") {
		t.Errorf("stdout %q: want exactly one continuation", out.String())
	}
	// Issue 21: the continuation is one line in words, not an event dump.
	const line = "agentloop: a Stop hook asked the model to keep going (1 of at most 3)\n"
	if strings.Count(errb.String(), line) != 1 || strings.Contains(errb.String(), "stop_continuation") {
		t.Errorf("stderr does not say the continuation once in words:\n%s", errb.String())
	}
	store := session.NewJSONLStore(filepath.Join(home, "sessions"))
	infos, err := store.List(context.Background(), ws)
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions %v %v", infos, err)
	}
	tr, err := store.Load(context.Background(), infos[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(tr)
	if !strings.Contains(string(raw), "also write DONE.txt") {
		t.Errorf("the model was not given the stop hook's reason")
	}
}

// Issue 5: a scripted run reads a file, edits it and checks the result.
func TestE2EReadEditCheck(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "greet.txt"), "hello world\n")
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"steps":[
		{"toolCalls":[{"name":"read","arguments":{"path":"greet.txt"}}]},
		{"toolCalls":[{"name":"edit","arguments":{"path":"greet.txt","edits":[{"oldText":"world","newText":"agentloop"}]}}]},
		{"toolCalls":[{"name":"bash","arguments":{"command":"grep -c agentloop greet.txt"}}]},
		{"text":"edited and checked"}]}`)
	env, out, errb := cliEnvWith(home, nil)
	code := execute(context.Background(), env, []string{"run", "--no-session", "--script", script, "--cwd", ws, "fix the greeting"})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	data, _ := os.ReadFile(filepath.Join(ws, "greet.txt"))
	if string(data) != "hello agentloop\n" {
		t.Errorf("file is %q", data)
	}
	errs := errb.String()
	for _, want := range []string{"→ read", "→ edit", "→ bash", "usage: 4 turns, 3 tool calls"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "✗") || !strings.Contains(out.String(), "edited and checked") {
		t.Errorf("a tool failed or the answer is missing:\n%s\n%s", out.String(), errs)
	}
}

// Issue 7: runs persist sessions; --continue, --session and --fork resume
// them; a second writer gets the lock message.
func TestE2ESessions(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"repeat":true,"steps":[{"text":"noted"}]}`)
	run := func(args ...string) (int, string) {
		env, _, errb := cliEnvWith(home, nil)
		code := execute(context.Background(), env, append([]string{"run", "--script", script, "--cwd", ws}, args...))
		return code, errb.String()
	}
	sessionOf := func(errs string) string {
		for _, l := range strings.Split(errs, "\n") {
			if id, ok := strings.CutPrefix(l, "session: "); ok {
				return id
			}
		}
		t.Fatalf("no session line in:\n%s", errs)
		return ""
	}
	code, errs := run("first prompt")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	id := sessionOf(errs)
	code, errs = run("--continue", "second prompt")
	if code != 0 || sessionOf(errs) != id {
		t.Fatalf("--continue: exit %d, %s", code, errs)
	}
	code, errs = run("--session", id[:13], "third prompt")
	if code != 0 || sessionOf(errs) != id {
		t.Fatalf("--session prefix: exit %d, %s", code, errs)
	}
	code, errs = run("--fork", id, "fork prompt")
	fork := sessionOf(errs)
	if code != 0 || fork == id {
		t.Fatalf("--fork: exit %d, %s", code, errs)
	}
	store := session.NewJSONLStore(filepath.Join(home, "sessions"))
	ctxOf := func(id string) string {
		s, err := store.Open(context.Background(), id, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var parts []string
		for _, m := range s.Context().Messages {
			parts = append(parts, m.Text())
		}
		return strings.Join(parts, "|")
	}
	if got := ctxOf(id); got != "first prompt|noted|second prompt|noted|third prompt|noted" {
		t.Errorf("session context %q", got)
	}
	if got := ctxOf(fork); got != "first prompt|noted|second prompt|noted|third prompt|noted|fork prompt|noted" {
		t.Errorf("fork context %q", got)
	}
	held, err := store.Open(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	code, errs = run("--session", id, "while held")
	if code != 1 || !strings.Contains(errs, "is in use by") || !strings.Contains(errs, "pid") || strings.Contains(errs, "usage:") {
		t.Errorf("second writer: exit %d, stderr %q", code, errs)
	}
	if code, errs := run("--no-session", "--continue", "x"); code != 2 || !strings.Contains(errs, "--no-session") {
		t.Errorf("--no-session --continue: exit %d, %s", code, errs)
	}
}

// Issue 10: a reply cut off by a transient failure after it streamed text
// is retried; the retry is visible on stderr and the text is not repeated.
func TestE2ERetryAfterStreamedText(t *testing.T) {
	tests := []struct {
		name, second, stdout, stderr string
	}{
		{"same start", "The answer is 42.", "The answer is 42.\n", "agentloop: the model is overloaded: retrying in"},
		{"different reply", "Let me think again.", "The answer is\nLet me think again.\n", "differs from the one cut off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"steps":[
				{"text":"The answer is","error":{"reason":"overloaded","status":529}},
				{"text":"`+tc.second+`"}]}`)
			env, out, errb := cliEnvWith(t.TempDir(), nil)
			code := execute(context.Background(), env, []string{"run", "--no-session", "--retry-base", "1ms", "--script", script, "--cwd", t.TempDir(), "?"})
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errb.String())
			}
			if got := out.String(); got != tc.stdout {
				t.Errorf("stdout %q, want %q", got, tc.stdout)
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errb.String())
			}
		})
	}
}

// Issue 13: the text display strips reasoning tags; --json carries the raw
// text (message events) and the stripped text (a reply event).
func TestE2EReplyTagsStripped(t *testing.T) {
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"steps":[{"text":"<think>the user wants 42</think>The answer is <final>42</final>."}]}`)
	env, out, errb := cliEnvWith(t.TempDir(), nil)
	if code := execute(context.Background(), env, []string{"run", "--no-session", "--script", script, "--cwd", t.TempDir(), "?"}); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if got := out.String(); got != "The answer is 42.\n" {
		t.Errorf("stdout %q", got)
	}
	env, out, errb = cliEnvWith(t.TempDir(), nil)
	if code := execute(context.Background(), env, []string{"run", "--json", "--no-session", "--script", script, "--cwd", t.TempDir(), "?"}); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	var raw, stripped bool
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if ev.Type == "message_end" && len(ev.Message.Content) == 1 && strings.HasPrefix(ev.Message.Content[0].Text, "<think>the user wants 42</think>") {
			raw = true
		}
		if ev.Type == "reply" && ev.Text == "The answer is 42." {
			stripped = true
		}
	}
	if !raw || !stripped {
		t.Errorf("raw %v, stripped %v in:\n%s", raw, stripped, out.String())
	}
}

// Issue 7: a second agentloop process writing to a session that a running
// one holds fails at once with the lock message and exit code 1.
func TestE2ESecondWriterProcess(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	quick := writeFile(t, filepath.Join(t.TempDir(), "q.json"), `{"repeat":true,"steps":[{"text":"ok"}]}`)
	env, _, errb := cliEnvWith(home, nil)
	if code := execute(context.Background(), env, []string{"run", "--script", quick, "--cwd", ws, "start"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	id := ""
	for _, l := range strings.Split(errb.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "session: "); ok {
			id = v
		}
	}
	slow := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"steps":[{"text":"one two three four five six seven eight","delayMs":300,"tailMs":30000}]}`)
	// The holder keeps the lock for half a minute (it is killed once the
	// second writer has answered), so a slow start of the second process
	// on a loaded machine still finds it held.
	cmd := func(script string) *exec.Cmd {
		c := exec.Command(os.Args[0], "run", "--session", id, "--script", script, "--cwd", ws, "more")
		c.Env = append(os.Environ(), "AGENTLOOP_TEST_MAIN=1", "AGENTLOOP_HOME="+home)
		return c
	}
	holder := cmd(slow)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	holder.Stdout = pw
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	if _, err := pr.Read(make([]byte, 1)); err != nil { // the holder is streaming: it has the lock
		t.Fatalf("the first process printed nothing: %v", err)
	}
	second := cmd(quick)
	var out strings.Builder
	second.Stderr = &out
	start := time.Now()
	err = second.Run()
	code := second.ProcessState.ExitCode()
	want := fmt.Sprintf("is in use by pid %d", holder.Process.Pid)
	if code != 1 || !strings.Contains(out.String(), want) || time.Since(start) > 5*time.Second {
		t.Errorf("second writer: exit %d (%v) after %s, stderr %q; want 1 and %q", code, err, time.Since(start), out.String(), want)
	}
}

// Issue 10: budgets and the timeout stop a run cleanly with a reason.
func TestE2EBudgets(t *testing.T) {
	loop := writeFile(t, filepath.Join(t.TempDir(), "loop.json"),
		`{"repeat":true,"steps":[{"toolCalls":[{"name":"ls","arguments":{"path":"."}}]}]}`)
	slow := writeFile(t, filepath.Join(t.TempDir(), "slow.json"), `{"steps":[{"text":"a b c d e f g h i j","delayMs":3000}]}`)
	tests := []struct {
		name   string
		script string
		args   []string
		errs   string
	}{
		{"tokens", loop, []string{"--max-tokens", "5000"}, "over its budget of 5000 (--max-tokens)"},
		{"timeout", slow, []string{"--timeout", "300ms"}, "stopped at its timeout (--timeout)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, _, errb := cliEnvWith(t.TempDir(), nil)
			args := append([]string{"run", "--no-session", "--script", tc.script, "--cwd", t.TempDir()}, tc.args...)
			code := execute(context.Background(), env, append(args, "go"))
			if code != 1 || !strings.Contains(errb.String(), tc.errs) {
				t.Errorf("exit %d, stderr:\n%s\nwant 1 and %q", code, errb.String(), tc.errs)
			}
		})
	}
}

// Issue 10 (profiles): a key the server refuses moves the run to the next
// auth profile of models.json.
func TestE2EAuthProfileRotation(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-badkey", "sk-revoked")
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, "models.json"), `{"providers": {"openai": {
		"profiles": [{"id": "old", "apiKey": "sk-revoked"}, {"id": "new", "apiKey": "sk-fresh"}],
		"models": [{"id": "mock-model", "contextWindow": 64000}]}}}`)
	env, out, errb := cliEnvWith(home, nil)
	code := execute(context.Background(), env, []string{"run", "--no-session", "--model", "openai/mock-model", "--base-url", base + "/v1", "--cwd", ws, "hi"})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "switching to auth profile new") || !strings.Contains(out.String(), "done") {
		t.Errorf("stdout %q, stderr:\n%s", out.String(), errb.String())
	}
	// The failure is kept in $AGENTLOOP_HOME/auth-state.json: the next
	// process starts on the working key without trying the revoked one.
	before := mockStats(t, base)["requests"]
	env, out, errb = cliEnvWith(home, nil)
	code = execute(context.Background(), env, []string{"run", "--no-session", "--model", "openai/mock-model", "--base-url", base + "/v1", "--cwd", ws, "hi"})
	if code != 0 || !strings.Contains(errb.String(), "starting on new") || mockStats(t, base)["requests"] != before+1 {
		t.Errorf("second run: exit %d, stderr:\n%s", code, errb.String())
	}
}

// A model that stays overloaded through its retries hands the run to the
// fallback model.
func TestE2EModelFallback(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-failfirst", "100", "-failstatus", "529")
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "README.md"), "# Fallback works\n")
	env, out, errb := cliEnvWith(t.TempDir(), map[string]string{"OPENAI_API_KEY": "sk-mock"})
	code := execute(context.Background(), env, []string{"run", "--no-session", "--model", "openai/mock-model", "--base-url", base + "/v1",
		"--retry-base", "1ms", "--fallback", "faux/demo", "--cwd", ws, "what is here?"})
	errs := errb.String()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "now on faux/demo") || !strings.Contains(errs, "(faux/") || !strings.Contains(out.String(), "Fallback works") {
		t.Errorf("stdout %q, stderr:\n%s", out.String(), errs)
	}
	if st := mockStats(t, base); st["requests"] != 4 {
		t.Errorf("%d requests to the overloaded model, want 1 + 3 retries", st["requests"])
	}
}

// With every key of the first provider refused, the fallbacks of
// settings.json carry the run on a second provider (a second server).
func TestE2EFallbackToSecondProvider(t *testing.T) {
	dead := mockLLM(t, "-rounds", "1", "-badkey", "sk-dead")
	live := mockLLM(t, "-rounds", "1")
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, "models.json"), `{"providers":{
		"first":{"baseUrl":"`+dead+`/v1","api":"openai-completions","apiKey":"sk-dead","models":[{"id":"m1"}]},
		"second":{"baseUrl":"`+live+`/v1","api":"openai-completions","apiKey":"sk-live","models":[{"id":"m2"}]}}}`)
	writeFile(t, filepath.Join(home, "settings.json"), `{"fallbacks":["second/m2"]}`)
	env, out, errb := cliEnvWith(home, nil)
	code := execute(context.Background(), env, []string{"run", "--no-session", "--model", "first/m1", "--retry-base", "1ms", "--cwd", ws, "hi"})
	errs := errb.String()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "second/m2") || !strings.Contains(out.String(), "done") {
		t.Errorf("stdout %q, stderr:\n%s", out.String(), errs)
	}
	if n := mockStats(t, live)["requests"]; n < 2 {
		t.Errorf("the second provider got %d requests, want the whole run (2)", n)
	}
	if n := mockStats(t, dead)["requests"]; n != 1 {
		t.Errorf("the dead provider got %d requests, want 1 (a refused key is not retried)", n)
	}
}

// --idle-timeout bounds a model call that sends nothing: the run fails with
// a timeout (after its retries) instead of hanging.
func TestE2EIdleTimeout(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-delay", "3s")
	env, _, errb := cliEnvWith(t.TempDir(), map[string]string{"OPENAI_API_KEY": "sk-mock"})
	start := time.Now()
	code := execute(context.Background(), env, []string{"run", "--no-session", "--model", "openai/mock-model", "--base-url", base + "/v1",
		"--idle-timeout", "150ms", "--retry-base", "1ms", "--cwd", t.TempDir(), "hi"})
	if code != 1 || !strings.Contains(strings.ToLower(errb.String()), "timed out") && !strings.Contains(strings.ToLower(errb.String()), "timeout") {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("the run took %v: the idle timeout did not cut the silent calls short", d)
	}
}
