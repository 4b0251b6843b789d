package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// newTestWorkspace builds a workspace in a temp dir with a sibling
// "outside" directory and symlinks that lead out of the workspace.
//
//	<tmp>/ws/a.txt
//	<tmp>/ws/sub/b.txt
//	<tmp>/ws/out      -> <tmp>/outside        (dir symlink out)
//	<tmp>/ws/outfile  -> <tmp>/outside/secret (file symlink out)
//	<tmp>/ws/dangle   -> <tmp>/outside/new    (dangling, out)
//	<tmp>/ws/in       -> sub                  (symlink within)
//	<tmp>/outside/secret
func newTestWorkspace(t testing.TB, opts *WorkspaceOptions) (*Workspace, string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(tmp, "ws")
	outside := filepath.Join(tmp, "outside")
	for _, d := range []string{filepath.Join(ws, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(ws, "a.txt"):          "alpha\n",
		filepath.Join(ws, "sub", "b.txt"):   "beta\n",
		filepath.Join(outside, "secret"):    "secret needle\n",
		filepath.Join(outside, "other.txt"): "needle\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"out":     outside,
		"outfile": filepath.Join(outside, "secret"),
		"dangle":  filepath.Join(outside, "new"),
		"in":      "sub",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := NewWorkspace(ws, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w, tmp
}

func TestWorkspaceResolve(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	home, _ := os.UserHomeDir()
	tests := []struct {
		path        string
		want        string // real path; "" means an escape error
		viaSymlink  bool
		writeRefuse bool // refused for writing though readable
	}{
		{"a.txt", ws + "/a.txt", false, false},
		{"@a.txt", ws + "/a.txt", false, false},
		{"", ws, false, false},
		{".", ws, false, false},
		{"sub/../a.txt", ws + "/a.txt", false, false},
		{"new/dir/file.txt", ws + "/new/dir/file.txt", false, false},
		{ws + "/sub/b.txt", ws + "/sub/b.txt", false, false},
		{"in/b.txt", ws + "/sub/b.txt", false, false},
		{"sub\u00a0x", ws + "/sub\u00a0x", false, false},
		{"../outside/secret", "", false, false},
		{"sub/../../outside", "", false, false},
		{tmp + "/outside/secret", "", false, false},
		{"/etc/passwd", "", false, false},
		{"out/secret", "", true, false},
		{"outfile", "", true, false},
		{"dangle", "", true, false},
		{"out/newfile", "", true, false},
	}
	if home != "" && !within(ws, home) {
		tests = append(tests, struct {
			path        string
			want        string
			viaSymlink  bool
			writeRefuse bool
		}{"~/x", "", false, false})
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := w.ResolveRead(tt.path)
			if tt.want == "" {
				var esc *EscapeError
				if !errors.As(err, &esc) || !errors.Is(err, ErrOutsideWorkspace) {
					t.Fatalf("ResolveRead(%q) = %q, %v; want an escape error", tt.path, got, err)
				}
				if esc.ViaSymlink != tt.viaSymlink {
					t.Errorf("ViaSymlink = %v, want %v (%v)", esc.ViaSymlink, tt.viaSymlink, err)
				}
				if !strings.Contains(err.Error(), "outside the workspace "+ws) {
					t.Errorf("error does not name the workspace: %v", err)
				}
				if _, werr := w.ResolveWrite(tt.path); !errors.Is(werr, ErrOutsideWorkspace) {
					t.Errorf("ResolveWrite(%q) err = %v, want an escape error", tt.path, werr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ResolveRead(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
			if got, err := w.ResolveWrite(tt.path); err != nil || got != tt.want {
				t.Fatalf("ResolveWrite(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

func TestWorkspaceOptions(t *testing.T) {
	t.Run("read outside", func(t *testing.T) {
		w, tmp := newTestWorkspace(t, &WorkspaceOptions{AllowReadOutside: true})
		for _, p := range []string{"../outside/secret", "out/secret", tmp + "/outside/secret"} {
			if got, err := w.ResolveRead(p); err != nil || got != tmp+"/outside/secret" {
				t.Errorf("ResolveRead(%q) = %q, %v", p, got, err)
			}
			if _, err := w.ResolveWrite(p); !errors.Is(err, ErrOutsideWorkspace) {
				t.Errorf("ResolveWrite(%q) err = %v, want escape", p, err)
			}
		}
	})
	t.Run("extra readable", func(t *testing.T) {
		w, tmp := newTestWorkspace(t, nil)
		if err := w.AddReadable(filepath.Join(tmp, "outside")); err != nil {
			t.Fatal(err)
		}
		if got, err := w.ResolveRead(tmp + "/outside/secret"); err != nil || got != tmp+"/outside/secret" {
			t.Errorf("ResolveRead in readable dir = %q, %v", got, err)
		}
		if _, err := w.ResolveWrite(tmp + "/outside/secret"); !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("write in readable dir err = %v, want escape", err)
		}
		if _, err := w.ResolveRead(tmp + "/outsider"); !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("sibling with a common prefix readable: %v", err)
		}
		if got := w.Readable(); len(got) != 1 || got[0] != tmp+"/outside" {
			t.Errorf("Readable() = %v", got)
		}
	})
	t.Run("read only", func(t *testing.T) {
		w, _ := newTestWorkspace(t, &WorkspaceOptions{ReadOnly: true})
		if _, err := w.ResolveWrite("a.txt"); !errors.Is(err, ErrReadOnly) {
			t.Errorf("ResolveWrite in read-only workspace err = %v", err)
		}
		if _, err := w.ResolveRead("a.txt"); err != nil {
			t.Errorf("ResolveRead in read-only workspace err = %v", err)
		}
	})
	t.Run("root through a symlink", func(t *testing.T) {
		_, tmp := newTestWorkspace(t, nil)
		alias := filepath.Join(tmp, "alias")
		if err := os.Symlink(filepath.Join(tmp, "ws"), alias); err != nil {
			t.Fatal(err)
		}
		w, err := NewWorkspace(alias, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w.Root() != filepath.Join(tmp, "ws") {
			t.Errorf("Root() = %q, want the real path", w.Root())
		}
		if got, err := w.ResolveRead(alias + "/a.txt"); err != nil || got != tmp+"/ws/a.txt" {
			t.Errorf("path through the alias = %q, %v", got, err)
		}
		if w.Rel(tmp+"/ws/sub/b.txt") != "sub/b.txt" || w.Rel(w.Root()) != "." || w.Rel("/etc") != "/etc" {
			t.Errorf("Rel gives %q %q %q", w.Rel(tmp+"/ws/sub/b.txt"), w.Rel(w.Root()), w.Rel("/etc"))
		}
	})
	t.Run("not a directory", func(t *testing.T) {
		_, tmp := newTestWorkspace(t, nil)
		if _, err := NewWorkspace(tmp+"/ws/a.txt", nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("NewWorkspace(file) err = %v", err)
		}
		if _, err := NewWorkspace(tmp+"/missing", nil); err == nil {
			t.Error("NewWorkspace(missing dir) succeeded")
		}
	})
	t.Run("symlink loop", func(t *testing.T) {
		w, tmp := newTestWorkspace(t, nil)
		if err := os.Symlink("loop", filepath.Join(tmp, "ws", "loop")); err != nil {
			t.Fatal(err)
		}
		if _, err := w.ResolveRead("loop"); err == nil || !strings.Contains(err.Error(), "too many levels") {
			t.Errorf("symlink loop err = %v", err)
		}
	})
	t.Run("symlink through a missing directory", func(t *testing.T) {
		// sneak -> missing/../out, and out -> <tmp>/outside. The kernel
		// cannot resolve sneak/x (missing does not exist), so it must not
		// resolve to ws/out/x, which the kernel then follows outside.
		w, tmp := newTestWorkspace(t, nil)
		if err := os.Symlink("missing/../out", filepath.Join(tmp, "ws", "sneak")); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"sneak/x", "sneak/secret"} {
			if got, err := w.ResolveWrite(p); err == nil {
				t.Errorf("ResolveWrite(%q) = %q, want an error", p, got)
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ResolveWrite(%q) err = %v, want one saying it does not exist", p, err)
			}
			if got, err := w.ResolveRead(p); err == nil {
				t.Errorf("ResolveRead(%q) = %q, want an error", p, got)
			}
		}
		if _, err := os.Stat(filepath.Join(tmp, "outside", "x")); err == nil {
			t.Error("a file appeared outside the workspace")
		}
	})
}

// The read-only tools are classed concurrency-safe: run them side by side
// (under -race) while a readable directory is being added.
func TestConcurrentReadOnlyTools(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	reg, err := tool.NewRegistry(New(w)...)
	if err != nil {
		t.Fatal(err)
	}
	calls := []string{
		`{"name":"read","args":{"path":"a.txt"}}`,
		`{"name":"grep","args":{"pattern":"alpha|beta"}}`,
		`{"name":"find","args":{"pattern":"*.txt"}}`,
		`{"name":"ls","args":{"path":"sub"}}`,
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(calls))
	for i := range 4 * len(calls) {
		wg.Go(func() {
			var c struct {
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			}
			_ = json.Unmarshal([]byte(calls[i%len(calls)]), &c)
			if res := reg.Execute(context.Background(), llm.ToolCall("c", c.Name, c.Args), nil); res.IsError {
				errs <- c.Name + ": " + res.Text()
			}
		})
	}
	if err := w.AddReadable(filepath.Join(tmp, "outside")); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestPathVariants(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	for _, name := range []string{
		"Screenshot 2024-05-01 at 10.21.33\u202fAM.png",
		"cafe\u0301.txt",
		"it\u2019s.md",
		"two words.txt",
		"plain 9 AM.txt",
	} {
		writeFile(t, filepath.Join(ws, name), "x")
	}
	tests := []struct{ asked, found string }{
		{"Screenshot 2024-05-01 at 10.21.33 AM.png", "Screenshot 2024-05-01 at 10.21.33\u202fAM.png"},
		{"caf\u00e9.txt", "cafe\u0301.txt"},
		{"it's.md", "it\u2019s.md"},
		{"two\u00a0words.txt", "two words.txt"},
		{"plain 9 AM.txt", "plain 9 AM.txt"}, // exists as given: no variant
		{"missing AM.txt", "missing AM.txt"},
	}
	for _, tt := range tests {
		got, err := w.ResolveRead(tt.asked)
		if err != nil || got != filepath.Join(ws, tt.found) {
			t.Errorf("ResolveRead(%q) = %q, %v; want %q", tt.asked, got, err, tt.found)
		}
	}
	// A variant is confined like any path.
	writeFile(t, filepath.Join(tmp, "outside", "caf\u00e9"), "x")
	if err := os.Symlink(filepath.Join(tmp, "outside", "caf\u00e9"), filepath.Join(ws, "cafe\u0301")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ResolveRead("caf\u00e9"); !errors.Is(err, ErrOutsideWorkspace) {
		t.Errorf("variant through a symlink out: %v", err)
	}
}

// FuzzResolve checks confinement against the kernel: whatever path the
// model gives, a path ResolveWrite accepts lies in the workspace, and the
// part of it that exists has no symlink left in it (EvalSymlinks leaves it
// as it is), so opening it cannot lead anywhere else.
func FuzzResolve(f *testing.F) {
	for _, p := range []string{"a.txt", "sub/../a.txt", "in/b.txt", "out/secret", "dangle", "sneak/x",
		"../outside/secret", "in/../../outside", "loop/x", "chain/b.txt", "new/dir/f", "/etc/passwd", "~/x", "@in"} {
		f.Add(p)
	}
	w, tmp := newTestWorkspace(f, nil)
	ws := filepath.Join(tmp, "ws")
	for name, target := range map[string]string{
		"sneak": "missing/../out", "loop": "loop", "chain": "in/../in", "up": "..", "deep": "sub/../../ws/sub",
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, p string) {
		real, err := w.ResolveWrite(p)
		if err != nil {
			return
		}
		if !within(w.Root(), real) {
			t.Fatalf("ResolveWrite(%q) = %q, outside %s", p, real, w.Root())
		}
		// The deepest existing ancestor must already be a real path.
		existing := real
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			parent := filepath.Dir(existing)
			if parent == existing {
				return
			}
			existing = parent
		}
		got, err := filepath.EvalSymlinks(existing)
		if err != nil {
			t.Fatalf("ResolveWrite(%q) = %q, but %q does not resolve: %v", p, real, existing, err)
		}
		if got != existing {
			t.Fatalf("ResolveWrite(%q) = %q, but %q still leads to %q", p, real, existing, got)
		}
	})
}
