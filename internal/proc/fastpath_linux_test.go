package proc

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Issue 20.2: the sweep after a command that left nothing behind costs
// about a plain exec: with no child left (the shell already waited for),
// Kill, Find and ReapOrphans answer from one waitid and read nothing under
// /proc.
func TestSweepNothingLeftReadsNoProc(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	tag := NewTag()
	born := Now()
	cmd := exec.Command("bash", "-c", "echo ok")
	Prepare(cmd, tag)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	before := walks.Load()
	rest := Target{Group: cmd.Process.Pid, Tag: tag, AdoptedSince: born}
	if k := Kill(rest); len(k) != 0 {
		t.Fatalf("killed %v after a command that left nothing", k)
	}
	if f := Find(rest); len(f) != 0 {
		t.Fatalf("found %v", f)
	}
	if n := ReapOrphans(); n != 0 {
		t.Fatalf("reaped %d orphans", n)
	}
	if n := walks.Load() - before; n != 0 {
		t.Fatalf("the sweep walked /proc %d times; want 0", n)
	}
}

// The fast path gives way as soon as anything is left: a setsid daemon
// adopted from a command that cleared its environment is still found and
// killed, with one walk.
func TestSweepFindsAdoptedAfterFastPath(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	tag := NewTag()
	born := Now()
	cmd := exec.Command("bash", "-c", "env -i setsid sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile)
	Prepare(cmd, tag)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := daemonPid(t, pidFile)
	if !running(pid) {
		t.Fatalf("the daemon %d is not running", pid)
	}
	if born > Stamp(pid).Start {
		t.Fatalf("Now before the start (%d) is after the daemon's start time (%d)", born, Stamp(pid).Start)
	}
	killed := Kill(Target{Group: cmd.Process.Pid, Tag: tag, AdoptedSince: born})
	if rest := Reap(killed, 0, 5*time.Second); len(rest) > 0 {
		t.Fatalf("not reaped: %v", rest)
	}
	if running(pid) {
		t.Fatalf("the daemon %d outlived the sweep (killed %v)", pid, killed)
	}
}
