package session

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childCmd returns the test binary re-executed as a child of the given kind.
func childCmd(t *testing.T, kind string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + kind}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestCrashAppendKill kills a child that appends in a loop with SIGKILL at
// random moments, 200 times, appending again after each kill. Every file
// must load, every context must satisfy the pairing contract after repair,
// and at most the entry being written may be lost.
func TestCrashAppendKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 200 processes")
	}
	dir := t.TempDir()
	rounds := 200
	rng := rand.New(rand.NewPCG(1, 2))
	deadline := time.Now().Add(120 * time.Second)
	reported, total := 0, 0 // entries the children said they wrote
	var path string
	for round := range rounds {
		// A new session every 20 kills keeps files small enough for 200
		// loads under the race detector.
		id := "crash" + strconv.Itoa(round/20)
		if round%20 == 0 {
			total += reported
			reported, path = 0, ""
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d rounds in 120 s", round)
		}
		cmd := childCmd(t, "crash", childDirEnv+"="+dir, childIDEnv+"="+id)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdin, err := cmd.StdinPipe() // held open: the child waits on it after its burst
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		// Let it write a random number of entries, then kill it mid-loop.
		want := 1 + rng.IntN(crashBurst)
		for i := 0; i < want && sc.Scan(); i++ {
			reported, _ = strconv.Atoi(sc.Text())
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for sc.Scan() { // what it said before it died counts too
			reported, _ = strconv.Atoi(sc.Text())
		}
		err = cmd.Wait()
		stdin.Close()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v, not by our SIGKILL", round, err)
		}
		if path == "" {
			files, _ := filepath.Glob(filepath.Join(dir, "*", "*_"+id+".jsonl"))
			if len(files) != 1 {
				t.Fatalf("want one session file, found %v", files)
			}
			path = files[0]
		}
		torn := round%10 == 9
		if torn {
			// A kill can tear a line that crosses a page boundary, and a
			// power cut any line; make sure every tenth round has one.
			f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"type":"message","id":"torn","parentId":"x","message":{"role":"us`)
			f.Close()
		}
		tr, err := LoadFile(path)
		if err != nil {
			t.Fatalf("round %d: load: %v", round, err)
		}
		if len(tr.Warnings) > 1 || torn && len(tr.Warnings) != 1 {
			t.Fatalf("round %d: warnings %q", round, tr.Warnings)
		}
		n := len(tr.Entries)
		if n < reported || n > reported+1 {
			t.Fatalf("round %d: file holds %d entries, the child reported %d written", round, n, reported)
		}
		reported = n
		for k, e := range tr.Entries {
			if e.Message == nil || e.Message.Text() != "entry "+strconv.Itoa(k) {
				t.Fatalf("round %d: entry %d is %+v", round, k, e.Message)
			}
		}
		ctx := tr.Context("")
		if len(ctx.Messages) != n {
			t.Fatalf("round %d: context has %d messages for %d entries", round, len(ctx.Messages), n)
		}
		// The file itself is paired except when the kill fell between a
		// call and its result; the repair pipeline covers that case.
		if err := CheckPairing(ctx.Messages); (err != nil) != (n%4 == 2) {
			t.Fatalf("round %d: %d entries, raw pairing: %v", round, n, err)
		}
		if err := CheckPairing(Repair(ctx.Messages, RepairOptions{})); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	t.Logf("%d kills, %d entries in %d files", rounds, total+reported, (rounds+19)/20)
}

// TestLockTwoProcesses holds a session's lock in a real second process:
// we are refused with its pid, and the lock is free the moment it dies.
func TestLockTwoProcesses(t *testing.T) {
	st := newStore(t)
	id, path := writeSession(t, st, 1)
	cmd := childCmd(t, "lock", childPathEnv+"="+path)
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not lock: %q %v", line, err)
	}
	ctx := context.Background()
	_, err = st.Open(ctx, id, nil)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("open while the child holds the lock: %v", err)
	}
	if le.PID != cmd.Process.Pid || le.Since.IsZero() {
		t.Errorf("lock error names pid %d since %v, want pid %d", le.PID, le.Since, cmd.Process.Pid)
	}
	wantMsg := "session " + idFromPath(path) + " is in use by pid " + strconv.Itoa(cmd.Process.Pid) + " since "
	if !strings.HasPrefix(err.Error(), wantMsg) {
		t.Errorf("message %q, want it to start with %q", err, wantMsg)
	}
	// Waiting gives up after the timeout (a short real one: the holder is
	// a real process).
	start := time.Now()
	_, err = st.Open(ctx, id, &LockOptions{Wait: true, Timeout: 120 * time.Millisecond})
	if !errors.As(err, &le) || le.Waited < 120*time.Millisecond || time.Since(start) > 5*time.Second {
		t.Fatalf("waiting open: %v after %v", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "waited") {
		t.Errorf("message should say it waited: %v", err)
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	s, err := st.Open(ctx, id, nil)
	if err != nil {
		t.Fatalf("lock not free after the holder was killed: %v", err)
	}
	s.Close()
}
