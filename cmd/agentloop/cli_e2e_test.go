package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
