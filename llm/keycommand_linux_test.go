package llm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 19.5 and 20.2: a "!command" key runs as a process tree of
// internal/proc, so a background child it leaves (here one that also left
// the group with setsid) is ended with it, not left running.
func TestKeyCommandLeavesNothingRunning(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	key, err := ResolveKey(context.Background(), "!setsid sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile+"; echo sk-from-command", nil)
	if err != nil || key != "sk-from-command" {
		t.Fatalf("ResolveKey = %q, %v", key, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		gone := err != nil || strings.Contains(string(stat), ") Z ")
		if gone {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the key command's background child %d is still running", pid)
		}
		time.Sleep(10 * time.Millisecond) // waiting on a child process
	}
}
