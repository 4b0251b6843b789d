package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// overLimit counts the request bodies in mockllm's -capture file longer
// than limit bytes, and all of them.
func overLimit(t *testing.T, capture string, limit int) (over, all int) {
	t.Helper()
	data, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		all++
		if len(sc.Bytes()) > limit {
			over++
		}
	}
	return over, all
}

// Issue 18, item 8: a model declared at 128K tokens served with a 15K
// window (mockllm's -ctxlimit, in bytes: 61440 bytes, which it states as
// 61440/4 = 15360 tokens). The first run learns the window from the one
// refused request and finishes its 30 rounds; a second run, on a new
// session, starts with the learned window and is never refused. auth
// status lists the window, auth reset forgets it.
func TestE2ELearnedContextWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "30", "-cmd", "yes a | head -c 8000", "-ctxlimit", "61440", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	writeModels(t, home, 128_000)
	// mockllm repeats one command, which loop detection rightly calls a
	// loop; this test is about the context window.
	args := []string{"--max-turns", "200", "--no-loop-detection", "run the command"}

	code, _, errs := runMock(t, home, ws, base, args...)
	if code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, tail(errs, 2000))
	}
	if n := strings.Count(errs, "with a context window of 15360 tokens (declared: 128000)"); n != 1 {
		t.Errorf("%d window notices, want 1:\n%s", n, tail(errs, 2000))
	}
	over, all := overLimit(t, capture, 61440)
	if over > 1 {
		t.Errorf("first run: %d of %d requests over the limit, want at most 1", over, all)
	}
	t.Logf("first run: %d requests, %d over the limit", all, over)

	code, _, errs = runMock(t, home, ws, base, args...)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, tail(errs, 2000))
	}
	over2, all2 := overLimit(t, capture, 61440)
	if over2 != over {
		t.Errorf("second run: %d requests over the limit, want none", over2-over)
	}
	if strings.Contains(errs, "context window of") || strings.Contains(errs, "overflow") {
		t.Errorf("second run relearned or overflowed:\n%s", tail(errs, 2000))
	}
	t.Logf("second run: %d requests", all2-all)

	env, out, _ := cliEnvWith(home, nil)
	if code := execute(t.Context(), env, []string{"auth", "status"}); code != 0 || !strings.Contains(out.String(), "mock-model  15360") {
		t.Errorf("auth status (exit %d):\n%s", code, out)
	}
	env, out, _ = cliEnvWith(home, nil)
	if code := execute(t.Context(), env, []string{"auth", "reset", "openai"}); code != 0 || !strings.Contains(out.String(), "forgot 1 learned context window") {
		t.Errorf("auth reset (exit %d):\n%s", code, out)
	}
	env, out, _ = cliEnvWith(home, nil)
	if execute(t.Context(), env, []string{"auth", "status"}); strings.Contains(out.String(), "15360") {
		t.Errorf("the window is still listed after reset:\n%s", out)
	}
}

// Issue 18, item 5: an apiKey that names a variable that is not set says
// so, instead of sending the variable's name as the key; an unknown key of
// the models file is a warning with its line.
func TestModelsFileKeyVariableUnset(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "models.json"), `{"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
  "apiKey": "MY_LOCAL_KEY", "models": [{"id": "m", "contextWindw": 32000}]}}}`)
	env, _, errb := cliEnvWith(home, nil)
	code := execute(t.Context(), env, []string{"run", "--model", "local/m", "--no-session", "hi"})
	if code == 0 || !strings.Contains(errb.String(), "MY_LOCAL_KEY is not set") {
		t.Errorf("exit %d:\n%s", code, errb.String())
	}
	writeFile(t, filepath.Join(home, "models.json"), `{"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
  "apiKey": "sk-literal", "models": [{"id": "m", "contextWindw": 32000}]}}}`)
	env, _, errb = cliEnvWith(home, nil)
	execute(t.Context(), env, []string{"run", "--model", "local/m", "--no-session", "--retry-base", "1ms", "hi"})
	if !strings.Contains(errb.String(), `warning: `) || !strings.Contains(errb.String(), `line 2: unknown key "contextWindw"`) {
		t.Errorf("no warning for the unknown key:\n%s", errb.String())
	}
}
