package builtin

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFind(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	writeFile(t, ws+"/.gitignore", "node_modules/\n*.tmp\n")
	writeFile(t, ws+"/src/a.go", "")
	writeFile(t, ws+"/src/a_test.go", "")
	writeFile(t, ws+"/src/deep/b.go", "")
	writeFile(t, ws+"/src/deep/c.ts", "")
	writeFile(t, ws+"/src/deep/c.tsx", "")
	writeFile(t, ws+"/node_modules/m/index.go", "")
	writeFile(t, ws+"/x.tmp", "")
	writeFile(t, ws+"/.hidden/h.go", "")
	tests := []struct {
		name, args, want, wantErr string
	}{
		{name: "base name at any depth", args: `{"pattern":"*.go"}`, want: ".hidden/h.go\nsrc/a.go\nsrc/a_test.go\nsrc/deep/b.go"},
		{name: "double star path", args: `{"pattern":"src/**/*.go"}`, want: "src/a.go\nsrc/a_test.go\nsrc/deep/b.go"},
		{name: "single star stays in a directory", args: `{"pattern":"src/*.go"}`, want: "src/a.go\nsrc/a_test.go"},
		{name: "braces", args: `{"pattern":"*.{ts,tsx}"}`, want: "src/deep/c.ts\nsrc/deep/c.tsx"},
		{name: "class", args: `{"pattern":"[ab].go"}`, want: ".hidden/h.go"[:0] + "src/a.go\nsrc/deep/b.go"},
		{name: "under a path", args: `{"pattern":"*.go","path":"src/deep"}`, want: "src/deep/b.go"},
		{name: "relative to the search path", args: `{"pattern":"deep/*","path":"src"}`, want: "src/deep/b.go\nsrc/deep/c.ts\nsrc/deep/c.tsx"},
		{name: "directories", args: `{"pattern":"deep"}`, want: "src/deep/"},
		{name: "symlinks listed, not followed", args: `{"pattern":"out*"}`, want: "out\noutfile"},
		{name: "limit", args: `{"pattern":"*.go","limit":2}`,
			want: ".hidden/h.go\nsrc/a.go\n\n[Stopped at 2 results. Use limit=4 for more, or narrow the pattern.]"},
		{name: "none", args: `{"pattern":"*.rs"}`, want: `No files match "*.rs" in ..`},
		{name: "empty pattern", args: `{"pattern":" "}`, wantErr: "pattern is empty"},
		{name: "file as path", args: `{"pattern":"*","path":"a.txt"}`, wantErr: "a.txt is a file, not a directory"},
		{name: "dotdot escape", args: `{"pattern":"*","path":".."}`, wantErr: "outside the workspace"},
		{name: "absolute escape", args: `{"pattern":"*","path":"` + tmp + `/outside"}`, wantErr: "outside the workspace"},
		{name: "symlink escape", args: `{"pattern":"*","path":"out"}`, wantErr: "leads through a symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, NewFind(w), tt.args)
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

func TestGlob(t *testing.T) {
	tests := []struct {
		glob string
		yes  []string
		no   []string
	}{
		{"*.go", []string{"a.go", "x/y/a.go"}, []string{"a.goo", "a.go/x"}},
		{"**/*.go", []string{"a.go", "x/a.go", "x/y/a.go"}, []string{"a.ts"}},
		{"src/**", []string{"src/a", "src/a/b"}, []string{"src", "lib/src/a"}},
		{"a/**/b", []string{"a/b", "a/x/b", "a/x/y/b"}, []string{"a/xb", "b"}},
		{"a?c", []string{"abc"}, []string{"a/c", "ac"}},
		{"[!a]*", []string{"b", "cde"}, []string{"a", "abc"}},
		{"*.{js,jsx}", []string{"x.js", "x.jsx"}, []string{"x.ts"}},
		{`\*.txt`, []string{"*.txt"}, []string{"a.txt"}},
		{"a+b(c).txt", []string{"a+b(c).txt"}, []string{"aab(c).txt"}},
		{"./src/*.go", []string{"src/a.go"}, []string{"x/src/a.go"}},
	}
	for _, tt := range tests {
		g, err := newPathGlob(tt.glob)
		if err != nil {
			t.Fatalf("%s: %v", tt.glob, err)
		}
		for _, p := range tt.yes {
			if !g.match(p) {
				t.Errorf("%q does not match %q", tt.glob, p)
			}
		}
		for _, p := range tt.no {
			if g.match(p) {
				t.Errorf("%q matches %q", tt.glob, p)
			}
		}
	}
}

func TestGitignore(t *testing.T) {
	f := parseGitignore("/r", []byte("# comment\n\n*.log\n!important.log\nbuild/\n/top.txt\ndocs/*.md\n**/gen/**\ntrail \\ \n\\#hash\n"))
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"/r/a.log", false, true},
		{"/r/x/y/a.log", false, true},
		{"/r/important.log", false, false},
		{"/r/build", true, true},
		{"/r/build", false, false},
		{"/r/x/build", true, true},
		{"/r/top.txt", false, true},
		{"/r/x/top.txt", false, false},
		{"/r/docs/a.md", false, true},
		{"/r/docs/x/a.md", false, false},
		{"/r/x/gen/y.go", false, true},
		{"/r/trail  ", false, true},
		{"/r/trail ", false, false},
		{"/r/#hash", false, true},
		{"/r/main.go", false, false},
		{"/other/a.log", false, false},
	}
	for _, tt := range tests {
		if got := ignored([]*ignoreFile{f}, tt.path, tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
	// A deeper file overrides a shallower one.
	deep := parseGitignore("/r/sub", []byte("!keep.log\n"))
	if ignored([]*ignoreFile{f, deep}, "/r/sub/keep.log", false) {
		t.Error("deeper negation did not win")
	}
}

// FuzzGlob checks that no glob or .gitignore line makes the compiler
// panic, and that a glob without special characters matches itself.
func FuzzGlob(f *testing.F) {
	for _, s := range []string{"*.go", "**/a/**/b", "[!a-z]?", "{a,{b,c}}", `\*`, "[", "a/**", "]["} {
		f.Add(s, "a/b.go")
	}
	f.Fuzz(func(t *testing.T, glob, p string) {
		if g, err := newPathGlob(glob); err == nil {
			g.match(p)
		}
		parseGitignore("/r", []byte(glob))
		if !strings.ContainsAny(glob, `*?[]{},\/`) && glob != "" && utf8.ValidString(glob) {
			g, err := newPathGlob(glob)
			if err != nil || !g.match(glob) {
				t.Fatalf("plain glob %q does not match itself (%v)", glob, err)
			}
		}
	})
}
