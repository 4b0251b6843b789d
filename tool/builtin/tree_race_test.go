package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/tool"
)

// Issue 17, item 6: while another process swaps a directory of the
// workspace for a symlink out of it (and a file for a symlink to a file
// outside), read, grep, ls, find, write and edit never see or change
// anything outside. The paths are checked and then opened through an
// os.Root, so the swap can make a call fail but never escape.
func TestToolsRaceSymlinkSwaps(t *testing.T) {
	defer goleak.VerifyNone(t)
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	const secret = "OUTSIDE-SECRET"
	for _, f := range []struct{ path, content string }{
		{filepath.Join(outside, "secret.txt"), secret + "\n"},
		{filepath.Join(ws, "in", "secret.txt"), "inside\n"},
		{filepath.Join(ws, "f.txt"), "inside f\n"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := NewWorkspace(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	in, bak, file := filepath.Join(ws, "in"), filepath.Join(ws, "in.real"), filepath.Join(ws, "f.txt")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var naiveEscapes atomic.Int64
	// The attacker: swap in/ for a symlink to outside/ and back, and
	// f.txt for a symlink to outside/secret.txt and back, as fast as it can.
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = os.Rename(in, bak)
			_ = os.Symlink(outside, in)
			// Control: a plain read of the same path, checked just before,
			// would have escaped now.
			if b, err := os.ReadFile(filepath.Join(in, "secret.txt")); err == nil && strings.Contains(string(b), secret) {
				naiveEscapes.Add(1)
			}
			_ = os.Remove(in)
			_ = os.Rename(bak, in)
			_ = os.Remove(file)
			_ = os.Symlink(filepath.Join(outside, "secret.txt"), file)
			_ = os.Remove(file)
			_ = os.WriteFile(file, []byte("inside f\n"), 0o644)
		}
	})
	calls := []struct {
		t    tool.Tool
		args map[string]any
	}{
		{NewRead(w), map[string]any{"path": "in/secret.txt"}},
		{NewRead(w), map[string]any{"path": "f.txt"}},
		{NewGrep(w), map[string]any{"pattern": "SECRET", "path": "in"}},
		{NewGrep(w), map[string]any{"pattern": "SECRET"}},
		{NewLs(w), map[string]any{"path": "in"}},
		{NewFind(w), map[string]any{"pattern": "*", "path": "in"}},
		{NewWrite(w), map[string]any{"path": "in/pwn.txt", "content": "PWNED"}},
		{NewEdit(w), map[string]any{"path": "f.txt", "edits": []map[string]string{{"oldText": secret, "newText": "PWNED"}}}},
		{NewEdit(w), map[string]any{"path": "in/secret.txt", "edits": []map[string]string{{"oldText": secret, "newText": "PWNED"}}}},
	}
	var escapes, succeeded atomic.Int64
	var mu sync.Mutex
	var seen []string
	for _, c := range calls {
		args, _ := json.Marshal(c.args)
		call := tool.Call{ID: "race", Name: c.t.Name(), Args: args}
		wg.Go(func() {
			for ctx.Err() == nil {
				res, err := c.t.Execute(context.Background(), call, nil)
				if err != nil || res.IsError {
					continue
				}
				succeeded.Add(1)
				if text := res.Text(); strings.Contains(text, secret) || strings.Contains(text, "outside") {
					escapes.Add(1)
					mu.Lock()
					if len(seen) < 5 {
						seen = append(seen, c.t.Name()+" "+string(args)+": "+text)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if n := escapes.Load(); n > 0 {
		t.Errorf("%d calls saw outside the workspace, e.g.:\n%s", n, strings.Join(seen, "\n"))
	}
	entries, _ := os.ReadDir(outside)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"secret.txt"}) {
		t.Errorf("files appeared outside the workspace: %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != secret+"\n" {
		t.Errorf("the outside file was changed to %q", b)
	}
	t.Logf("%d successful calls; the swapped path led outside %d times", succeeded.Load(), naiveEscapes.Load())
	if succeeded.Load() == 0 || naiveEscapes.Load() == 0 {
		t.Fatalf("the race was not exercised (%d successful calls, %d naive escapes)", succeeded.Load(), naiveEscapes.Load())
	}
}
