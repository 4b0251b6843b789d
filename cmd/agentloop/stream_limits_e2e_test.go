package main

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// endlessServer streams Chat Completions text deltas of 1000 bytes for as
// long as the client reads, pausing pause between them; it counts requests.
func endlessServer(t *testing.T, pause time.Duration, requests *atomic.Int64) *httptest.Server {
	chunk := []byte(`data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 1000) + `"}}]}` + "\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if pause > 0 {
				time.Sleep(pause) // the pace of a slow stream, on a real connection
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Issue 17, item 5: a server that streams text forever. Each reply is cut
// at the byte cap (the model declares an absurd output limit, so the cap
// is wire.MaxOutputBytes, 4 MiB), so memory and the transcript stay
// bounded, and the run ends within a second of --timeout 2s whether the
// stream is fast (the caps end each reply) or slow (the timeout does).
func TestE2EEndlessReply(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built CLI")
	}
	bin := builtCLI(t)
	for _, c := range []struct {
		name  string
		pause time.Duration
	}{{"fast", 0}, {"slow", time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := endlessServer(t, c.pause, &requests)
			home, ws := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(home, "models.json"),
				`{"providers": {"openai": {"models": [{"id": "mock-model", "contextWindow": 128000, "maxTokens": 4000000}]}}}`)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "--model", "openai/mock-model", "--base-url", srv.URL+"/v1", "--cwd", ws, "--timeout", "2s", "say something")
			cmd.Env = append(os.Environ(), "AGENTLOOP_HOME="+home, "OPENAI_API_KEY=sk-endless")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			peak := watchPeakRSS(cmd.Process.Pid)
			_ = cmd.Wait() // the fast run ends as length, the slow one at the timeout
			wall := time.Since(start)
			rss := peak() // KiB
			transcript := dirSize(t, filepath.Join(home, "sessions"))
			t.Logf("%s: %v wall, %d MiB peak RSS, %d MiB transcript, %d MiB stdout, %d requests", c.name, wall.Round(10*time.Millisecond), rss>>10, transcript>>20, stdout.Len()>>20, requests.Load())
			// A run whose timeout falls in a compaction is given the
			// compaction's grace once (by design); then the reply caps
			// and the continuation limit end it instead of the clock. That
			// happens on a loaded machine, where 4 MiB replies take longer.
			graced := strings.Contains(stderr.String(), "the run timeout came during a compaction")
			switch {
			case ctx.Err() != nil:
				t.Errorf("the run did not end within 30s\n%s", tail(stderr.String(), 1000))
			case wall > 3*time.Second && !graced:
				t.Errorf("the run took %v with --timeout 2s\n%s", wall, tail(stderr.String(), 1000))
			}
			if rss > 256<<10 {
				t.Errorf("peak RSS %d MiB", rss>>10)
			}
			if transcript > 24<<20 {
				t.Errorf("transcript of %d MiB", transcript>>20)
			}
			if c.name == "slow" && !strings.Contains(stderr.String(), "stopped at its timeout") {
				t.Errorf("the slow run did not end at its timeout:\n%s", tail(stderr.String(), 1000))
			}
		})
	}
}

// Issue 17, item 8: one SSE event over the reader's 8 MiB limit. The same
// request would get the same event: it is not retried, and the user reads
// what happened, not "the provider had an internal error".
func TestE2EOversizedEventNotRetried(t *testing.T) {
	var requests atomic.Int64
	big := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("y", 9<<20) + `"}}]}` + "\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(big))
	}))
	defer srv.Close()
	home, ws := t.TempDir(), t.TempDir()
	writeModels(t, home, 128_000)
	env, _, errb := cliEnvWith(home, map[string]string{"OPENAI_API_KEY": "sk-big"})
	code := execute(t.Context(), env, []string{"run", "--model", "openai/mock-model", "--base-url", srv.URL + "/v1", "--cwd", ws,
		"--no-session", "--retry-base", "10ms", "hi"})
	errs := errb.String()
	if code == 0 || requests.Load() != 1 {
		t.Errorf("exit %d after %d requests, want a failure after 1:\n%s", code, requests.Load(), errs)
	}
	if strings.Contains(errs, "retrying") || strings.Contains(errs, "internal error") {
		t.Errorf("retried, or reported as the provider's internal error:\n%s", errs)
	}
	if !strings.Contains(errs, "larger than agentloop accepts") {
		t.Errorf("the error does not say what happened:\n%s", errs)
	}
}
