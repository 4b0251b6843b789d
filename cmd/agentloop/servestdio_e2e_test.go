package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// agentloop serve --stdio as a parent process drives it: JSON-RPC lines on
// its stdin, answers and event notifications on its stdout, against
// mockllm's real wire. The run's notifications are the events agentloop
// run --json prints for the same run (bar the envelope, the session file
// and clock readings); closing stdin ends the server with exit 0.
func TestServeStdio(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644)
	env := []string{"OPENAI_API_KEY=sk-mock"}
	mockFlags := []string{"-rounds", "2", "-text", "5"}

	refBase := mockLLM(t, mockFlags...)
	code, out, errs := execCLIIn(t, "", ws, home, env, "run", "--json", "--model", "openai/mock-model", "--base-url", refBase+"/v1", "--cwd", ws, "say hello")
	if code != 0 {
		t.Fatalf("run --json: exit %d: %s", code, errs)
	}
	var want []any
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("--json line: %v: %s", err, line)
		}
		if m["type"] != "reply" {
			want = append(want, normalise(m))
		}
	}

	base := mockLLM(t, mockFlags...)
	cmd := exec.Command(builtCLI(t), "serve", "--stdio", "--model", "openai/mock-model", "--base-url", base+"/v1")
	cmd.Dir = ws
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan map[string]any, 1000)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line is not JSON-RPC: %v: %s", err, sc.Bytes())
				continue
			}
			lines <- m
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})

	id := 0
	send := func(method string, params any) int {
		id++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := fmt.Fprintf(stdin, "%s\n", b); err != nil {
			t.Fatalf("write %s: %v", method, err)
		}
		return id
	}
	var events []map[string]any
	wait := func(want int) map[string]any {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("stdout ended; stderr: %s", stderr.String())
				}
				if m["method"] == "event" {
					events = append(events, m["params"].(map[string]any))
					continue
				}
				if got, _ := m["id"].(float64); int(got) == want && m["method"] == nil {
					if m["error"] != nil {
						t.Fatalf("request %d: %v", want, m["error"])
					}
					return m["result"].(map[string]any)
				}
			case <-timeout:
				t.Fatalf("no answer to request %d; stderr: %s", want, stderr.String())
			}
		}
	}
	wait(send("initialize", map[string]any{"client": map[string]any{"name": "e2e", "version": "1"}}))
	sess := wait(send("session/create", map[string]any{"cwd": ws}))
	wait(send("events/subscribe", map[string]any{"sessionId": sess["id"]}))
	run := wait(send("run/start", map[string]any{"sessionId": sess["id"], "input": "say hello", "idempotencyKey": "k1"}))
	timeout := time.After(20 * time.Second)
	for len(events) == 0 || events[len(events)-1]["type"] != "run_end" {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended before run_end; stderr: %s", stderr.String())
			}
			if m["method"] == "event" {
				events = append(events, m["params"].(map[string]any))
			}
		case <-timeout:
			t.Fatalf("no run_end within 20s; %d events", len(events))
		}
	}
	var got []any
	for _, e := range events {
		if e["type"] == "session_status" || e["runId"] != run["runId"] {
			continue
		}
		got = append(got, normalise(e))
	}
	sameEventStrands(t, "stdio", got, want)
	// The parent closes stdin: the server ends, exit 0.
	stdin.Close()
	for range lines {
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve --stdio exited with %v; stderr: %s", err, stderr.String())
		}
		exited <- nil
	case <-time.After(15 * time.Second):
		t.Fatal("serve --stdio did not exit after stdin closed")
	}
	if _, err := io.WriteString(stdin, "{}\n"); err == nil {
		t.Fatal("stdin still open")
	}

	// Flags of a listener beside --stdio are usage errors.
	code, _, errs = execCLIIn(t, "", ws, home, env, "serve", "--stdio", "--listen", "127.0.0.1:0", "--model", "faux/demo")
	if code != 2 || !strings.Contains(errs, "--stdio and --listen") {
		t.Fatalf("--stdio --listen: exit %d: %s", code, errs)
	}
}
