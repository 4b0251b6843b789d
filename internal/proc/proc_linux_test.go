package proc

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		line string
		want info
		ok   bool
	}{
		{"plain", "42 (sleep) S 7 42 7 0 -1 4194560 93 0 0 0 0 0 0 0 20 0 1 0 123456 5 6", info{pid: 42, ppid: 7, pgrp: 42, state: 'S', start: 123456}, true},
		{"name with spaces and parens", "42 (a (b) c) Z 1 3 3 0 -1 4194560 93 0 0 0 0 0 0 0 20 0 1 0 99 5 6", info{pid: 42, ppid: 1, pgrp: 3, state: 'Z', start: 99}, true},
		{"truncated", "42 (sleep) S 7 42", info{}, false},
		{"no name", "42 sleep S 7 42 7 0 -1 4194560 93 0 0 0 0 0 0 0 20 0 1 0 1 5", info{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStat(42, []byte(tt.line))
			if ok != tt.ok || got != tt.want {
				t.Fatalf("parseStat = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// start runs script under bash, prepared with tag, and waits for its first
// output line.
func start(t *testing.T, script, tag string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	Prepare(cmd, tag)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("first line %q, %v", line, err)
	}
	return cmd
}

func assertClean(t *testing.T, tag string) {
	t.Helper()
	tagged, zombies := Alive(tag)
	if len(tagged) > 0 || len(zombies) > 0 {
		t.Fatalf("left behind: tagged %v, zombie children %v", tagged, zombies)
	}
}

func TestKillRunningTreeWithSetsidEscapee(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	tag := NewTag()
	cmd := start(t, "setsid sleep 300 >/dev/null 2>&1 & sleep 300 >/dev/null & (sleep 300 &) ; echo ready; wait", tag)
	pid := cmd.Process.Pid
	killed := Kill(Target{Root: pid, Group: pid, Tag: tag})
	if len(killed) < 4 {
		t.Errorf("killed %d processes, want at least 4 (bash and three sleeps)", len(killed))
	}
	_ = cmd.Wait()
	if rest := Reap(killed, pid, 5*time.Second); len(rest) > 0 {
		t.Fatalf("not reaped: %v", rest)
	}
	assertClean(t, tag)
}

func TestKillLeftoversAfterExit(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	tag := NewTag()
	cmd := start(t, "setsid sleep 300 >/dev/null 2>&1 & sleep 300 >/dev/null 2>&1 & echo ready", tag)
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	tagged, _ := Alive(tag)
	if len(tagged) != 2 {
		t.Fatalf("before the sweep: %d tagged processes, want the 2 sleepers", len(tagged))
	}
	killed := Kill(Target{Group: pid, Tag: tag})
	if rest := Reap(killed, 0, 5*time.Second); len(rest) > 0 {
		t.Fatalf("not reaped: %v", rest)
	}
	assertClean(t, tag)
}

func TestKillGroupWithoutTag(t *testing.T) {
	// A process that clears its environment loses the tag but stays in the
	// process group.
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	tag := NewTag()
	cmd := start(t, "env -i sleep 300 >/dev/null 2>&1 & echo ready", tag)
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	killed := Kill(Target{Group: pid, Tag: tag})
	if len(killed) != 1 {
		t.Fatalf("killed %v, want the one untagged sleeper in the group", killed)
	}
	if rest := Reap(killed, 0, 5*time.Second); len(rest) > 0 {
		t.Fatalf("not reaped: %v", rest)
	}
	assertClean(t, tag)
}

func TestReapOrphans(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	// As a hook does: a shell in its own group leaves a short-lived child,
	// and nobody sweeps it. Once the shell is gone the child is this
	// process's, and when it exits it is a zombie only ReapOrphans collects.
	cmd := start(t, "sleep 0.05 >/dev/null 2>&1 & echo ready", "")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, zombies := Alive("")
		var orphan bool
		for _, z := range zombies {
			if in, ok := readStat(z); ok && in.pgrp == cmd.Process.Pid && in.ppid == self {
				orphan = true
			}
		}
		if orphan {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphan never became a zombie child of this process")
		}
		runtime.Gosched()
	}
	if n := ReapOrphans(); n != 1 {
		t.Errorf("ReapOrphans collected %d, want the one orphan", n)
	}
	if _, zombies := Alive(""); len(zombies) > 0 {
		t.Errorf("zombie children left: %v", zombies)
	}
}
