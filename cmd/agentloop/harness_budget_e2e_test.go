package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 25: --max-tokens binds inside an engine's native turn, as the
// engine reports its usage, not only after the turn. mockllm's script has
// five tool rounds; its first response (Claude Code's or pi's whole system
// prompt and tools as input) is over the budget already: the engine is
// stopped there the way Ctrl-C stops it, the run ends with the budget's
// message and the exit code of the built-in loop's budget stop, mockllm saw
// fewer requests than the script has rounds, and no process of the engine
// or its tools is left in the workspace.
func TestE2EHarnessBudget(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) { testHarnessBudget(t, eng) })
	}
}

func testHarnessBudget(t *testing.T, eng engine) {
	const rounds = 5
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "5", "-text", "3", "-cmd", "echo round >> rounds.txt", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := execCLI(t, eng.env(t, base), home, "run", "--harness", eng.name, "--model", "anthropic/mock-claude",
		"--cwd", ws, "--max-tokens", "100", "loop five times")
	if code != 1 || !strings.Contains(errs, "over its budget of 100 (--max-tokens)") {
		t.Fatalf("exit %d, stderr:\n%s\nstdout %s\nwant 1 and the budget message", code, errs, out)
	}
	reqs, _ := os.ReadFile(capture)
	n := bytes.Count(reqs, []byte("\n"))
	if n == 0 || n >= rounds {
		t.Errorf("mockllm saw %d requests, want fewer than the script's %d rounds: the budget did not stop the turn", n, rounds)
	}
	// Each mockllm response has 10 output tokens: what the engine reports
	// at the end of its turn (Claude Code's result totals) is not added to
	// what its messages reported.
	if want := fmt.Sprintf(", %d out", 10*n); !strings.Contains(errs, want) {
		t.Errorf("usage line: want %q (each of %d responses counted once): %s", want, n, errs)
	}
	ran, _ := os.ReadFile(filepath.Join(ws, "rounds.txt"))
	if n := bytes.Count(ran, []byte("\n")); n >= rounds-1 {
		t.Errorf("the engine's tool ran %d times", n)
	}
	msgs, bindings := mirrored(t, home, sessionOf(t, errs))
	if len(msgs) == 0 || msgs[0] != "user:loop five times" || len(bindings) != 1 {
		t.Errorf("transcript %s, bindings %v: want the mirrored turn and its binding kept", strings.Join(msgs, " | "), bindings)
	}
	noProcessIn(t, ws)
}

// Issue 25: --timeout ends an engine's turn while its tool runs: the run
// ends with the timeout's message and exit code, the engine and its tool
// are gone, and the interrupted call keeps its result.
func TestE2EHarnessTimeout(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) { testHarnessTimeout(t, eng) })
	}
}

func testHarnessTimeout(t *testing.T, eng engine) {
	// The timeout must come after the engine started its tool: pi alone
	// takes up to 16 s to start on a loaded machine.
	base := mockLLM(t, "-rounds", "1", "-text", "3", "-cmd", "echo started > slow.txt; tail -f /dev/null")
	home, ws := t.TempDir(), t.TempDir()
	start := time.Now()
	code, out, errs := execCLI(t, eng.env(t, base), home, "run", "--harness", eng.name, "--model", "anthropic/mock-claude",
		"--cwd", ws, "--timeout", "20s", "go slow")
	if code != 1 || !strings.Contains(errs, "stopped at its timeout (--timeout)") {
		t.Fatalf("exit %d after %s, stderr:\n%s\nstdout %s\nwant 1 and the timeout message", code, time.Since(start).Round(time.Millisecond), errs, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "slow.txt")); err != nil {
		t.Fatalf("the tool never started, the timeout came first: %s", errs)
	}
	msgs, _ := mirrored(t, home, sessionOf(t, errs))
	if got := strings.Join(msgs, " | "); !strings.Contains(got, "call:"+eng.bash+" | result:"+eng.bash) {
		t.Errorf("transcript %s: the interrupted call lost its result", got)
	}
	noProcessIn(t, ws)
}

// noProcessIn fails the test if a process still runs in dir: the engine
// and its tools run in the workspace, and none may outlive the run.
func noProcessIn(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if d, err := os.Readlink(p); err == nil && d == dir {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			t.Errorf("a process outlived the run: %s %q", p, cmdline)
		}
	}
}
