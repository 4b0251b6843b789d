package builtin

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestGrep(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	writeFile(t, ws+"/.gitignore", "*.log\nbuild/\n/rootonly.txt\n!keep.log\n")
	writeFile(t, ws+"/src/main.go", "package main\n\nfunc main() {\n\tneedle()\n}\n")
	writeFile(t, ws+"/src/util.go", "package main\n\n// Needle finder\nfunc needle() {}\n")
	writeFile(t, ws+"/src/sub/.gitignore", "gen.go\n")
	writeFile(t, ws+"/src/sub/gen.go", "needle generated\n")
	writeFile(t, ws+"/src/sub/x.ts", "const needle = 1\n")
	writeFile(t, ws+"/app.log", "needle in log\n")
	writeFile(t, ws+"/keep.log", "needle kept\n")
	writeFile(t, ws+"/build/out.txt", "needle built\n")
	writeFile(t, ws+"/rootonly.txt", "needle root\n")
	writeFile(t, ws+"/src/rootonly.txt", "needle nested\n")
	writeFile(t, ws+"/.git/config", "needle git\n")
	writeFile(t, ws+"/blob.bin", "needle\x00binary")
	writeFile(t, ws+"/long.txt", "needle "+strings.Repeat("z", 600)+"\n")
	writeFile(t, ws+"/ctx.txt", "1\n2\nhit a\n4\n5\n6\n7\n8\nhit b\n10\n")
	writeFile(t, ws+"/crlf.txt", "hit$\r\n")
	writeFile(t, ws+"/lit.txt", "a.b(c)\naxb(c)\n")

	tests := []struct {
		name, args string
		want       string // the whole text, when set
		has        []string
		hasNot     []string
		wantErr    string
	}{
		{name: "gitignore and binary", args: `{"pattern":"needle"}`,
			has: []string{
				"keep.log:1: needle kept", "src/main.go:4: \tneedle()", "src/util.go:4: func needle() {}",
				"src/sub/x.ts:1: const needle = 1", "src/rootonly.txt:1: needle nested", "long.txt:1: needle zz"},
			hasNot: []string{"app.log", "build/", "gen.go", ".git", "blob.bin", "needle root", "secret"}},
		{name: "ignore case", args: `{"pattern":"needle finder","ignoreCase":true,"path":"src"}`, want: "src/util.go:3: // Needle finder"},
		{name: "glob by name", args: `{"pattern":"needle","glob":"*.ts"}`, want: "src/sub/x.ts:1: const needle = 1"},
		{name: "glob with braces", args: `{"pattern":"needle","glob":"*.{ts,log}"}`, want: "keep.log:1: needle kept\nsrc/sub/x.ts:1: const needle = 1"},
		{name: "glob by path", args: `{"pattern":"needle","glob":"src/sub/**"}`, want: "src/sub/x.ts:1: const needle = 1"},
		{name: "one file", args: `{"pattern":"needle","path":"src/main.go"}`, want: "src/main.go:4: \tneedle()"},
		{name: "ignored file named explicitly", args: `{"pattern":"needle","path":"app.log"}`, want: "app.log:1: needle in log"},
		{name: "literal", args: `{"pattern":"a.b(c)","literal":true,"path":"lit.txt"}`, want: "lit.txt:1: a.b(c)"},
		{name: "regexp", args: `{"pattern":"a.b\\(c\\)","path":"lit.txt"}`, want: "lit.txt:1: a.b(c)\nlit.txt:2: axb(c)"},
		{name: "CRLF and $", args: `{"pattern":"hit\\$$","path":"crlf.txt"}`, want: "crlf.txt:1: hit$"},
		{name: "context", args: `{"pattern":"hit","path":"ctx.txt","context":1}`,
			want: "ctx.txt-2- 2\nctx.txt:3: hit a\nctx.txt-4- 4\n--\nctx.txt-8- 8\nctx.txt:9: hit b\nctx.txt-10- 10"},
		{name: "context joins groups", args: `{"pattern":"hit","path":"ctx.txt","context":3}`,
			has: []string{"ctx.txt-6- 6\nctx.txt-7- 7"}, hasNot: []string{"--"}},
		{name: "limit", args: `{"pattern":"hit","path":"ctx.txt","limit":1}`,
			want: "ctx.txt:3: hit a\n\n[Stopped at 1 matches. Use limit=2 for more, or narrow the pattern.]"},
		{name: "limit exactly reached", args: `{"pattern":"hit","path":"ctx.txt","limit":2}`, want: "ctx.txt:3: hit a\nctx.txt:9: hit b"},
		{name: "long line cut", args: `{"pattern":"needle","path":"long.txt"}`,
			want: "long.txt:1: needle " + strings.Repeat("z", GrepMaxLineChars-7) + " [… line cut]"},
		{name: "no match", args: `{"pattern":"zebra"}`, want: `No matches for "zebra" in ..`},
		{name: "bad regexp", args: `{"pattern":"a(b"}`, wantErr: `pattern "a(b" is not a valid regular expression: error parsing regexp: missing closing ): ` + "`a(b`; fix it, or set literal=true"},
		{name: "bad glob", args: `{"pattern":"x","glob":"{a,b"}`, wantErr: `glob "{a,b" has an unclosed {`},
		{name: "missing path", args: `{"pattern":"x","path":"nope"}`, wantErr: "nope does not exist"},
		{name: "dotdot escape", args: `{"pattern":"needle","path":"../outside"}`, wantErr: "outside the workspace"},
		{name: "absolute escape", args: `{"pattern":"needle","path":"` + tmp + `/outside"}`, wantErr: "outside the workspace"},
		{name: "symlink escape", args: `{"pattern":"needle","path":"out"}`, wantErr: "leads through a symlink"},
		{name: "symlinked file escape", args: `{"pattern":"needle","path":"outfile"}`, wantErr: "leads through a symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, NewGrep(w), tt.args)
			text := res.Text()
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(text, tt.wantErr) {
					t.Fatalf("got %q, want error containing %q", text, tt.wantErr)
				}
				return
			}
			if res.IsError {
				t.Fatalf("error: %s", text)
			}
			if tt.want != "" && text != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", text, tt.want)
			}
			for _, s := range tt.has {
				if !strings.Contains(text, s) {
					t.Errorf("lacks %q:\n%s", s, text)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(text, s) {
					t.Errorf("has %q:\n%s", s, text)
				}
			}
		})
	}
}

func TestGrepOutputCap(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "match %d %s\n", i, strings.Repeat("m", 80))
	}
	writeFile(t, tmp+"/ws/big.txt", b.String())
	res := run(t, NewGrep(w), `{"pattern":"match","limit":5000}`)
	text := res.Text()
	if res.IsError || !strings.Contains(text, "[Output stopped at 50 KB after") || len(text) > ReadMaxBytes+200 {
		t.Errorf("len %d, tail %q", len(text), tail(text))
	}
	var d GrepDetails
	if err := json.Unmarshal(res.Details, &d); err != nil || d.TruncatedBy != "bytes" || d.Matches == 0 {
		t.Errorf("details %+v %v", d, err)
	}
}

func TestGrepAllowReadOutside(t *testing.T) {
	w, tmp := newTestWorkspace(t, &WorkspaceOptions{AllowReadOutside: true})
	res := run(t, NewGrep(w), `{"pattern":"needle","path":"../outside"}`)
	want := tmp + "/outside/other.txt:1: needle\n" + tmp + "/outside/secret:1: secret needle"
	if res.IsError || res.Text() != want {
		t.Errorf("got %q, want %q", res.Text(), want)
	}
}
