package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// daemonPid waits for a pid written to path.
func daemonPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(5 * time.Millisecond) // waiting on a child process
	}
}

func running(pid int) bool {
	in, ok := readStat(pid)
	return ok && in.state != 'Z'
}

// Issue 17.7: a daemon that clears its environment, leaves the group with
// setsid and double-forks escapes the group and the tag; as the subreaper
// this process adopts it, and AdoptedSince finds it.
func TestKillAdoptedDaemon(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	tag := NewTag()
	cmd := start(t, "env -i setsid sh -c '(sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile+")'; echo ready", tag)
	born := Stamp(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	pid := daemonPid(t, pidFile)
	if !running(pid) {
		t.Fatalf("the daemon %d is not running", pid)
	}
	if got := Find(Target{Group: cmd.Process.Pid, Tag: tag}); len(got) != 0 {
		t.Fatalf("setup: the daemon was found without AdoptedSince (%v), so it did not escape", got)
	}
	killed := Kill(Target{Group: cmd.Process.Pid, Tag: tag, AdoptedSince: born.Start})
	if rest := Reap(killed, 0, 5*time.Second); len(rest) > 0 {
		t.Fatalf("not reaped: %v", rest)
	}
	if running(pid) {
		t.Fatalf("the daemon %d outlived the sweep (killed %v)", pid, killed)
	}
}

// A daemon that started before the command is not the command's.
func TestAdoptedSinceSparesOlderProcesses(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	first := start(t, "env -i setsid sh -c '(sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile+")'; echo ready", NewTag())
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	older := daemonPid(t, pidFile)
	defer func() { Reap(Kill(Target{Root: older}), 0, 5*time.Second) }()
	time.Sleep(30 * time.Millisecond) // start times count in clock ticks (10 ms)
	tag := NewTag()
	cmd := start(t, "echo ready", tag)
	born := Stamp(cmd.Process.Pid)
	_ = cmd.Wait()
	Reap(Kill(Target{Group: cmd.Process.Pid, Tag: tag, AdoptedSince: born.Start}), 0, 5*time.Second)
	if !running(older) {
		t.Fatal("a daemon older than the command was killed with it")
	}
}

// Issue 16.6: EndAll leaves nothing running, a process that ignores
// SIGTERM in its own group included.
func TestEndAll(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	tag := NewTag()
	stubborn := start(t, "trap '' TERM; echo ready; sleep 300", tag)
	go func() { _ = stubborn.Wait() }()
	d := start(t, "env -i setsid sh -c '(sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile+")'; echo ready", NewTag())
	_ = d.Wait()
	daemon := daemonPid(t, pidFile)
	if rest := EndAll(5 * time.Second); len(rest) > 0 {
		t.Fatalf("not collected: %v", rest)
	}
	if running(daemon) || running(stubborn.Process.Pid) {
		t.Fatal("a process outlived EndAll")
	}
	assertClean(t, tag)
}
