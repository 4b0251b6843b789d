package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

func TestWrite(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	tests := []struct {
		name, args, want, wantErr string
		file, content             string
	}{
		{name: "create with parents", args: `{"path":"new/deep/f.txt","content":"héllo"}`,
			want: "Created new/deep/f.txt: wrote 6 bytes.", file: "new/deep/f.txt", content: "héllo"},
		{name: "overwrite", args: `{"path":"a.txt","content":""}`, want: "Overwrote a.txt: wrote 0 bytes.", file: "a.txt", content: ""},
		{name: "through an inner symlink", args: `{"path":"in/c.txt","content":"c"}`, want: "Created in/c.txt: wrote 1 bytes.", file: "sub/c.txt", content: "c"},
		{name: "directory", args: `{"path":"sub","content":"x"}`, wantErr: "sub is a directory; give the path of a file"},
		{name: "trailing slash", args: `{"path":"newdir/","content":"x"}`, wantErr: `path "newdir/" ends in /, which names a directory`},
		{name: "missing content", args: `{"path":"x"}`, wantErr: "Invalid arguments"},
		{name: "dotdot escape", args: `{"path":"../outside/new","content":"x"}`, wantErr: "outside the workspace"},
		{name: "absolute escape", args: `{"path":"` + tmp + `/outside/new","content":"x"}`, wantErr: "outside the workspace"},
		{name: "symlink escape", args: `{"path":"outfile","content":"x"}`, wantErr: "leads through a symlink"},
		{name: "symlinked dir escape", args: `{"path":"out/new","content":"x"}`, wantErr: "leads through a symlink"},
		{name: "dangling symlink escape", args: `{"path":"dangle","content":"x"}`, wantErr: "leads through a symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, NewWrite(w), tt.args)
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Text(), tt.wantErr) {
					t.Fatalf("got %q, want error containing %q", res.Text(), tt.wantErr)
				}
				return
			}
			if res.IsError || res.Text() != tt.want {
				t.Fatalf("got %q, want %q", res.Text(), tt.want)
			}
			got, err := os.ReadFile(filepath.Join(ws, tt.file))
			if err != nil || string(got) != tt.content {
				t.Errorf("file = %q, %v; want %q", got, err, tt.content)
			}
		})
	}
	entries, _ := os.ReadDir(tmp + "/outside")
	if len(entries) != 2 {
		t.Errorf("the outside directory changed: %v", entries)
	}
	if leftovers, _ := filepath.Glob(ws + "/.*.agentloop-*"); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestReadOnlyWorkspace(t *testing.T) {
	w, _ := newTestWorkspace(t, &WorkspaceOptions{ReadOnly: true})
	var names []string
	for _, tl := range New(w) {
		names = append(names, tl.Name())
	}
	if got := strings.Join(names, ","); got != "read,grep,find,ls" {
		t.Errorf("tools of a read-only workspace = %s", got)
	}
	// Even a write tool built by hand cannot write.
	res := run(t, NewWrite(w), `{"path":"a.txt","content":"x"}`)
	if !res.IsError || res.Text() != ErrReadOnly.Error() {
		t.Errorf("write in a read-only workspace: %q", res.Text())
	}
}

func TestToolClasses(t *testing.T) {
	w, _ := newTestWorkspace(t, nil)
	want := map[string]bool{"read": true, "write": false, "edit": false, "grep": true, "find": true, "ls": true}
	tools := New(w)
	if len(tools) != len(want) {
		t.Fatalf("New gave %d tools", len(tools))
	}
	for _, tl := range tools {
		safe := tl.(tool.ConcurrencyClassifier).ConcurrencySafe(tool.Call{Name: tl.Name()})
		ro := tl.(interface{ ReadOnly() bool }).ReadOnly()
		if safe != want[tl.Name()] || ro != want[tl.Name()] {
			t.Errorf("%s: concurrency-safe %v, read-only %v; want %v", tl.Name(), safe, ro, want[tl.Name()])
		}
		if _, err := tool.NewRegistry(tl); err != nil {
			t.Errorf("%s: schema does not compile: %v", tl.Name(), err)
		}
	}
}

func TestCancelled(t *testing.T) {
	w, _ := newTestWorkspace(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tl := range []tool.Tool{NewGrep(w), NewFind(w)} {
		_, err := tl.Execute(ctx, tool.Call{Name: tl.Name(), Args: []byte(`{"pattern":"x"}`)}, func(tool.Partial) {})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", tl.Name(), err)
		}
	}
}
