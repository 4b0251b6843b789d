package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/session"
)

// Issue 25: `agentloop sessions delete` takes a prefix, deletes the session
// and says so, and refuses (exit 1, the session kept) one whose run is live.
func TestE2ESessionsDelete(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "2")
	home, ws := t.TempDir(), t.TempDir()
	mock := []string{"OPENAI_API_KEY=sk-mock"}
	newSession := func() (id, path string) {
		code, out, errs := execCLI(t, mock, home, "run", "--model", "openai/mock-model", "--base-url", base+"/v1", "--cwd", ws, "hello")
		if code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
		}
		id = sessionOf(t, errs)
		path, err := session.NewJSONLStore(filepath.Join(home, "sessions")).Resolve(id)
		if err != nil {
			t.Fatal(err)
		}
		return id, path
	}

	id, path := newSession()
	code, out, errs := execCLI(t, nil, home, "sessions", "delete", id[:8])
	if code != 0 || !strings.Contains(out, "deleted session "+id) {
		t.Fatalf("delete by prefix: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s is still there", path)
	}
	if code, _, errs := execCLI(t, nil, home, "sessions", "delete", id); code != exitUsage || !strings.Contains(errs, "no session") {
		t.Errorf("deleting it again: exit %d, stderr %s; want %d and no session", code, errs, exitUsage)
	}

	// A live run holds the lock: its model answers only after 30 s.
	id, path = newSession()
	slow := mockLLM(t, "-rounds", "0", "-delay", "30s")
	holder := exec.Command(builtCLI(t), "run", "--session", id, "--model", "openai/mock-model", "--base-url", slow+"/v1", "--cwd", ws, "more")
	holder.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home, "OPENAI_API_KEY=sk-mock"}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path + ".lock"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the live run never took the session's lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, errs = execCLI(t, nil, home, "sessions", "delete", id)
	want := fmt.Sprintf("not deleted: session %s is in use by pid %d", id, holder.Process.Pid)
	if code != exitFailed || !strings.Contains(errs, want) || strings.Contains(out, "deleted") {
		t.Errorf("delete of a live session: exit %d\nstdout %s\nstderr %s\nwant %d and %q", code, out, errs, exitFailed, want)
	}
	if _, err := session.NewJSONLStore(filepath.Join(home, "sessions")).Load(context.Background(), id); err != nil {
		t.Errorf("the live session is gone: %v", err)
	}
}

// Issue 25: deleting a pi-bound session deletes pi's session file too, and
// succeeds as well when that file has disappeared already (real pi).
func TestE2EHarnessSessionsDeletePi(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "3")
	env := piEnv(t, base)
	home, ws := t.TempDir(), t.TempDir()
	bound := func() (id, piFile string) {
		code, out, errs := execCLI(t, env, home, "run", "--harness", "pi", "--model", "anthropic/mock-claude", "--cwd", ws, "hello")
		if code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
		}
		id = sessionOf(t, errs)
		_, bindings := mirrored(t, home, id)
		if len(bindings) != 1 {
			t.Fatalf("bindings %v", bindings)
		}
		if _, err := os.Stat(bindings[0]); err != nil {
			t.Fatalf("pi's session file: %v", err)
		}
		return id, bindings[0]
	}
	gone := func(id string) {
		t.Helper()
		if _, err := session.NewJSONLStore(filepath.Join(home, "sessions")).Load(context.Background(), id); err == nil {
			t.Errorf("our transcript of %s is still there", id)
		}
	}

	id, piFile := bound()
	code, out, errs := execCLI(t, env, home, "sessions", "delete", id)
	if code != 0 || !strings.Contains(out, "deleted session "+id) || !strings.Contains(out, "deleted its pi session "+piFile) || errs != "" {
		t.Errorf("delete: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	gone(id)
	if _, err := os.Stat(piFile); err == nil {
		t.Errorf("pi's session file %s is still there", piFile)
	}

	id, piFile = bound()
	if err := os.Remove(piFile); err != nil {
		t.Fatal(err)
	}
	code, out, errs = execCLI(t, env, home, "sessions", "delete", id)
	if code != 0 || !strings.Contains(out, "deleted session "+id) || errs != "" {
		t.Errorf("delete with pi's file gone: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	gone(id)
}

// Issue 25: a fork of a session bound to pi carries the binding, so both
// resume pi's one session file: deleting the fork keeps that file (and
// says so), and the original's next turn still resumes it.
func TestE2EHarnessSessionsDeleteKeepsSharedNative(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "3")
	env := piEnv(t, base)
	home, ws := t.TempDir(), t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := execCLI(t, env, home, append([]string{"run", "--harness", "pi", "--model", "anthropic/mock-claude", "--cwd", ws}, args...)...)
		if code != 0 {
			t.Fatalf("run %v: exit %d\nstdout %s\nstderr %s", args, code, out, errs)
		}
		return sessionOf(t, errs)
	}
	id := run("hello")
	_, bindings := mirrored(t, home, id)
	if len(bindings) != 1 {
		t.Fatalf("bindings %v", bindings)
	}
	piFile := bindings[0]
	fork := run("--fork", id, "and more")
	if _, fb := mirrored(t, home, fork); len(fb) == 0 || fb[len(fb)-1] != piFile {
		t.Skipf("the fork is bound to %v, not to the original's pi session %s: nothing shared", fb, piFile)
	}
	code, out, errs := execCLI(t, env, home, "sessions", "delete", fork)
	if code != 0 || !strings.Contains(out, "deleted session "+fork) || !strings.Contains(out, "kept its pi session "+piFile) {
		t.Errorf("delete the fork: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if _, err := os.Stat(piFile); err != nil {
		t.Fatalf("deleting the fork took the original's pi session: %v", err)
	}
	run("--session", id, "again")
}
