package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
