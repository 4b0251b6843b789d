package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sessionLine is the id on the "session: ID" line of a run's stderr.
func sessionLine(stderr string) string {
	for l := range strings.Lines(stderr) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(l), "session: "); ok {
			return id
		}
	}
	return ""
}

// runIn runs the built CLI in dir.
func runIn(t *testing.T, dir, home string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(builtCLI(t), args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}
	return runProcess(t, cmd)
}

// Issue 21 item 3: `run -c` and `--session ID` without --model go on with
// the session's model, after the faux model; -c from a subdirectory finds
// the session of the directory above; --session of another directory's
// session says so.
func TestE2EResumeOnSessionModelFaux(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	sub := filepath.Join(ws, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runIn(t, ws, home, "run", "--model", "faux/demo", "hi")
	id := sessionLine(errs)
	if code != 0 || id == "" {
		t.Fatalf("first run: exit %d\n%s", code, errs)
	}
	code, _, errs = runIn(t, sub, home, "run", "-c", "again")
	if code != 0 || sessionLine(errs) != id || !strings.Contains(errs, "(faux/demo)") {
		t.Fatalf("run -c from %s: exit %d, want session %s on faux/demo\n%s", sub, code, id, errs)
	}
	if !strings.Contains(errs, "continuing session "+id+" of "+ws) {
		t.Errorf("-c from a subdirectory does not say which session it continues:\n%s", errs)
	}
	other := t.TempDir()
	code, _, errs = runIn(t, other, home, "run", "--session", id[:8], "once more")
	if code != 0 || sessionLine(errs) != id || !strings.Contains(errs, "(faux/demo)") {
		t.Fatalf("--session %s: exit %d\n%s", id[:8], code, errs)
	}
	if !strings.Contains(errs, "was recorded in "+ws) {
		t.Errorf("--session of another directory's session does not say so:\n%s", errs)
	}
	// sessions list shows the id --session takes.
	code, out, _ := runIn(t, ws, home, "sessions", "list")
	if code != 0 || !strings.Contains(out, id) {
		t.Errorf("sessions list does not show %s:\n%s", id, out)
	}
}

// After a model of a models file, `run -c` goes on with it and with the
// session's thinking level.
func TestE2EResumeOnSessionModelCustom(t *testing.T) {
	base := mockLLM(t, "-rounds", "0")
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, "models.json"), `{"providers":{"local":{"baseUrl":"`+base+`/v1","api":"openai-completions","apiKey":"sk-x","models":[{"id":"m","reasoning":true}]}}}`)
	code, _, errs := runIn(t, ws, home, "run", "--model", "local/m", "--thinking", "high", "hi")
	id := sessionLine(errs)
	if code != 0 || id == "" {
		t.Fatalf("first run: exit %d\n%s", code, errs)
	}
	before := mockStats(t, base)["requests"]
	code, _, errs = runIn(t, ws, home, "run", "-c", "again")
	if code != 0 || sessionLine(errs) != id || !strings.Contains(errs, "(local/m)") {
		t.Fatalf("run -c: exit %d\n%s", code, errs)
	}
	if n := mockStats(t, base)["requests"]; n <= before {
		t.Errorf("run -c sent no request to local/m (%d before, %d after)", before, n)
	}
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*"+id+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("transcript of %s: %v", id, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var levels []string
	for l := range strings.Lines(string(b)) {
		if strings.Contains(l, `"thinking_level_change"`) {
			i := strings.Index(l, `"thinkingLevel":"`)
			if i < 0 {
				t.Fatalf("thinking entry without a level: %s", l)
			}
			rest := l[i+len(`"thinkingLevel":"`):]
			levels = append(levels, rest[:strings.IndexByte(rest, '"')])
		}
	}
	if len(levels) == 0 || levels[len(levels)-1] != "high" {
		t.Errorf("thinking levels of the session %v, want the last one still high", levels)
	}
}
