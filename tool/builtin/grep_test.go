package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tool"
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

// benchTree writes a tree of 10,000 small Go-like files (100 directories
// of 100), with a .gitignore, and returns its workspace.
func benchTree(b *testing.B) *Workspace {
	b.Helper()
	root := b.TempDir()
	writeFile(b, root+"/.gitignore", "*.tmp\nvendor/\n")
	var body strings.Builder
	for i := range 30 {
		fmt.Fprintf(&body, "func f%d(x int) int { return x * %d } // ordinary code line\n", i, i)
	}
	for d := range 100 {
		dir := fmt.Sprintf("%s/pkg%03d", root, d)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			content := body.String()
			if f == 7 && d%10 == 0 {
				content += "// RAREWORD appears in one file of a thousand\n"
			}
			if err := os.WriteFile(fmt.Sprintf("%s/file%03d.go", dir, f), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	w, err := NewWorkspace(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkGrep10kFiles searches a 10,000-file tree (about 20 MB): a rare
// word, which must look at every file, and a common one, which stops at
// the default limit.
func BenchmarkGrep10kFiles(b *testing.B) {
	w := benchTree(b)
	g := NewGrep(w)
	for _, bc := range []struct{ name, args string }{
		{"rare", `{"pattern":"RAREWORD"}`},
		{"rare-ignorecase", `{"pattern":"rareword","ignoreCase":true}`},
		{"common-limit", `{"pattern":"return x"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			call := tool.Call{Name: "grep", Args: json.RawMessage(bc.args)}
			b.ReportAllocs()
			for b.Loop() {
				res, err := g.Execute(context.Background(), call, func(tool.Partial) {})
				if err != nil || res.IsError {
					b.Fatal(err, res.Text())
				}
			}
		})
	}
}

func TestGrepIgnoreCaseUnicode(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	// The Kelvin sign and the long s fold with k and s; the prefilter must
	// not skip files the case-insensitive regexp would match.
	writeFile(t, tmp+"/ws/fold.txt", "one \u212aey\ntwo \u017fun\nthree Straße\n")
	for _, tt := range []struct{ pattern, want string }{
		{"KEY", "fold.txt:1: one \u212aey"},
		{"sun", "fold.txt:2: two \u017fun"},
		{"STRASSE", `No matches for "STRASSE" in fold.txt.`}, // simple folding only, as regexp
		{"straße", "fold.txt:3: three Straße"},
	} {
		for _, literal := range []bool{false, true} {
			args := fmt.Sprintf(`{"pattern":%q,"path":"fold.txt","ignoreCase":true,"literal":%v}`, tt.pattern, literal)
			if res := run(t, NewGrep(w), args); res.Text() != tt.want {
				t.Errorf("%s: got %q, want %q", args, res.Text(), tt.want)
			}
		}
	}
	if got := string(foldCase(nil, []byte("Kk\u212a sS\u017f \xff"))); got != "KKK SSS \xff" {
		t.Errorf("foldCase = %q", got)
	}
}

// A file over grepWholeFileMax is streamed line by line instead of read
// whole; both paths must report the same lines, context and CRLF handling
// included, and skip binary files alike.
func TestGrepLargeFileStreamed(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	var b strings.Builder
	for i := 1; b.Len() <= grepWholeFileMax; i++ {
		switch i {
		case 2, 70_000:
			fmt.Fprintf(&b, "needle %d\r\n", i)
		default:
			fmt.Fprintf(&b, "filler line %d\r\n", i)
		}
	}
	b.WriteString("last needle")
	big := b.String()
	writeFile(t, ws+"/big.txt", big)
	writeFile(t, ws+"/big.bin", "\x00"+big)
	small := strings.Join(strings.Split(big, "\r\n")[:3], "\r\n")
	writeFile(t, ws+"/small.txt", small)

	res := run(t, NewGrep(w), `{"pattern":"needle( \\d+)?$","path":"big.txt","context":1}`)
	want := "big.txt-1- filler line 1\nbig.txt:2: needle 2\nbig.txt-3- filler line 3\n--\n" +
		"big.txt-69999- filler line 69999\nbig.txt:70000: needle 70000\nbig.txt-70001- filler line 70001\n--\n"
	lines := strings.Count(big, "\n") + 1
	want += fmt.Sprintf("big.txt-%d- filler line %d\nbig.txt:%d: last needle", lines-1, lines-1, lines)
	if res.IsError || res.Text() != want {
		t.Errorf("streamed grep:\n%s\nwant:\n%s", res.Text(), want)
	}
	// The whole-file path says the same of the same lines.
	res = run(t, NewGrep(w), `{"pattern":"needle( \\d+)?$","path":"small.txt","context":1}`)
	if want := "small.txt-1- filler line 1\nsmall.txt:2: needle 2\nsmall.txt-3- filler line 3"; res.Text() != want {
		t.Errorf("whole-file grep:\n%s\nwant:\n%s", res.Text(), want)
	}
	res = run(t, NewGrep(w), `{"pattern":"needle","glob":"big.*","limit":5}`)
	if !strings.Contains(res.Text(), "big.txt:2: needle 2") || strings.Contains(res.Text(), "big.bin") {
		t.Errorf("the large binary file was searched, or the text one was not:\n%s", res.Text())
	}
}
