package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLs(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	writeFile(t, ws+"/B.txt", "")
	writeFile(t, ws+"/.env", "")
	if err := os.Mkdir(ws+"/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		writeFile(t, fmt.Sprintf("%s/many/f%02d", ws, i), "")
	}
	tests := []struct {
		name, args, want, wantErr string
	}{
		{name: "root", args: `{}`, want: ".env\na.txt\nB.txt\ndangle\nempty/\nin/\nmany/\nout/\noutfile\nsub/"},
		{name: "subdir", args: `{"path":"sub"}`, want: "b.txt"},
		{name: "through an inner symlink", args: `{"path":"in"}`, want: "b.txt"},
		{name: "empty", args: `{"path":"empty"}`, want: "[empty is an empty directory]"},
		{name: "limit", args: `{"path":"many","limit":2}`, want: "f00\nf01\n\n[Showing 2 of 12 entries. Use limit=12 to see more.]"},
		{name: "file", args: `{"path":"a.txt"}`, wantErr: "a.txt is a file, not a directory; use read to see it"},
		{name: "missing", args: `{"path":"nope"}`, wantErr: "nope does not exist"},
		{name: "dotdot escape", args: `{"path":".."}`, wantErr: "outside the workspace"},
		{name: "absolute escape", args: `{"path":"/"}`, wantErr: "outside the workspace"},
		{name: "symlink escape", args: `{"path":"out"}`, wantErr: "leads through a symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, NewLs(w), tt.args)
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Text(), tt.wantErr) {
					t.Fatalf("got %q, want error containing %q", res.Text(), tt.wantErr)
				}
				return
			}
			if res.IsError || res.Text() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", res.Text(), tt.want)
			}
		})
	}
}
