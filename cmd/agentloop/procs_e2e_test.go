package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// End-to-end tests that nothing the built CLI starts outlives it.

// pidsIn reads the pids written one a line to path, waiting until there
// are at least n.
func pidsIn(t *testing.T, path string, n int, timeout time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(path)
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
		if len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d pids, want %d", path, len(pids), n)
		}
		time.Sleep(10 * time.Millisecond) // waiting on child processes
	}
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func killPids(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// Issue 16.6: after a second Ctrl-C, a SessionEnd hook that ignores
// SIGTERM and a bash command still running are gone when agentloop exits.
func TestE2ESecondInterruptEndsHooksAndTools(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	dir := t.TempDir()
	toolPids, hookPids := filepath.Join(dir, "tool"), filepath.Join(dir, "hook")
	// The command ignores SIGTERM too, and leaves its group with setsid, so
	// only a kill of the whole tree by pid ends it.
	base := mockLLM(t, "-rounds", "1", "-cmd",
		"trap '' TERM; echo $$ >> "+toolPids+"; setsid sleep 30 & echo $! >> "+toolPids+"; wait")
	home, ws := t.TempDir(), t.TempDir()
	end := "trap '' TERM; echo $$ >> " + hookPids + "; sleep 15 & echo $! >> " + hookPids + "; wait"
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"SessionEnd": []any{map[string]any{
		"hooks": []any{map[string]any{"type": "command", "command": end, "timeout": 60}}}}}})
	writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), string(settings))

	cmd := exec.Command(builtCLI(t), "run", "--trust", "--no-session", "--cwd", ws, "--model", "openai/mock-model", "--base-url", base+"/v1", "go")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home, "OPENAI_API_KEY=sk-mock"}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	tools := pidsIn(t, toolPids, 2, 20*time.Second)
	defer killPids(tools)
	_ = cmd.Process.Signal(syscall.SIGINT)
	hooks := pidsIn(t, hookPids, 2, 20*time.Second)
	defer killPids(hooks)
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("agentloop did not exit after the second Ctrl-C:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), "interrupted twice") {
		t.Errorf("stderr:\n%s", errb.String())
	}
	for _, p := range append(tools, hooks...) {
		if alive(p) {
			t.Errorf("process %d (tool %v, hook %v) outlived agentloop", p, tools, hooks)
		}
	}
}

// Issue 17.7: a daemon started from bash with env -i, setsid and a double
// fork ends with the run (without --sandbox).
func TestE2EDaemonEndsWithRun(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	base := mockLLM(t, "-rounds", "1", "-cmd",
		"env -i setsid sh -c '(sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile+")'; sleep 0.2; echo started")
	home, ws := t.TempDir(), t.TempDir()
	cmd := exec.Command(builtCLI(t), "run", "--no-session", "--cwd", ws, "--model", "openai/mock-model", "--base-url", base+"/v1", "go")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home, "OPENAI_API_KEY=sk-mock"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pids := pidsIn(t, pidFile, 1, time.Second)
	defer killPids(pids)
	if alive(pids[0]) {
		t.Fatalf("the daemon %d outlived the run:\n%s", pids[0], out)
	}
}
