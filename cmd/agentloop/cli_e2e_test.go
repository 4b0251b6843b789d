package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Tests that run agentloop as a user does (its own process, its own
// signals, its own RSS) build the command once per test binary.

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
)

// builtCLI builds ./cmd/agentloop once per test binary and returns its path.
func builtCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentloop-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliBin = filepath.Join(dir, "agentloop")
		out, err := exec.Command("go", "build", "-o", cliBin, ".").CombinedOutput()
		if err != nil {
			cliErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliBin
}

// execCLI runs the built CLI with args in a minimal environment (PATH,
// HOME and AGENTLOOP_HOME set to home) plus env, and returns its exit code,
// stdout and stderr.
func execCLI(t *testing.T, env []string, home string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(builtCLI(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}, env...)
	return runProcess(t, cmd)
}

// runProcess runs cmd and returns its exit code, stdout and stderr.
func runProcess(t *testing.T, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// watchPeakRSS follows the peak resident set (VmHWM, KiB) of the running
// process pid until it exits; the function it returns waits for that and
// gives the largest value seen. The child's rusage cannot be used: Go starts
// children with CLONE_VM, so their ru_maxrss includes the test binary's own
// memory at the time of exec.
func watchPeakRSS(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				return
			}
			for line := range strings.Lines(string(b)) {
				if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
					if kb > peak.Load() {
						peak.Store(kb)
					}
				}
			}
			if strings.Contains(string(b), "State:\tZ") {
				return
			}
			time.Sleep(5 * time.Millisecond) // sampling a child process
		}
	}()
	return func() int64 { <-done; return peak.Load() }
}
