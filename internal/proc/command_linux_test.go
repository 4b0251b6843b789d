package proc

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// Issue 19.5: one entry point owns a command's tree. Run ends what the
// command left behind, an adopted env -i setsid daemon included.
func TestCommandRunEndsLeftovers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := CommandContext(context.Background(), "bash", "-c", "env -i setsid sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile+"; sleep 300 >/dev/null 2>&1 &")
	if err := c.Run(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if pid := daemonPid(t, pidFile); running(pid) {
		t.Fatalf("the daemon %d outlived Run", pid)
	}
	if len(c.Killed()) < 2 {
		t.Errorf("killed %v, want the daemon and the sleeper", c.Killed())
	}
	assertClean(t, c.Tag())
}

// An ended context kills the running tree, escapees included.
func TestCommandContextKillsTree(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := CommandContext(ctx, "bash", "-c", "setsid sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile+"; wait")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := daemonPid(t, pidFile)
	cancel()
	_ = c.Cmd.Wait()
	c.Sweep(false, 5*time.Second)
	if running(pid) {
		t.Fatalf("the escapee %d outlived the cancel", pid)
	}
	assertClean(t, c.Tag())
}

// With keep, what still runs is kept for a later Kill of Rest.
func TestCommandSweepKeeps(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := CommandContext(context.Background(), "bash", "-c", "sleep 300 >/dev/null 2>&1 & echo $! > "+pidFile)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_ = c.Cmd.Wait()
	pid := daemonPid(t, pidFile)
	if !c.Sweep(true, time.Second) || !running(pid) {
		t.Fatal("the background sleeper was not kept")
	}
	Reap(Kill(c.Rest()), 0, 5*time.Second)
	if running(pid) {
		t.Fatal("Kill(Rest()) left the kept sleeper running")
	}
	assertClean(t, c.Tag())
}
