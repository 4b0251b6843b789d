package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentloop/agentloop/tool"
)

func TestApplyEdits(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		edits   []Edit
		want    string
		wantErr string
		norm    bool // expect a normalised match
	}{
		{name: "exact", src: "a\nb\nc\n", edits: []Edit{{"b", "B"}}, want: "a\nB\nc\n"},
		{name: "multi-line", src: "func f() {\n\treturn 1\n}\n", edits: []Edit{{"\treturn 1\n}", "\treturn 2\n}"}}, want: "func f() {\n\treturn 2\n}\n"},
		{name: "delete lines", src: "a\nb\nc\n", edits: []Edit{{"b\n", ""}}, want: "a\nc\n"},
		{name: "several edits", src: "one two three", edits: []Edit{{"three", "3"}, {"one", "1"}}, want: "1 two 3"},
		{name: "edits against the original", src: "x y", edits: []Edit{{"x", "y"}, {"y", "z"}}, want: "y z"},
		{name: "keeps CRLF", src: "a\r\nb\r\nc\r\n", edits: []Edit{{"a\nb", "A\nB\nX"}}, want: "A\r\nB\r\nX\r\nc\r\n"},
		{name: "CRLF oldText in LF file", src: "a\nb\n", edits: []Edit{{"a\r\nb", "c"}}, want: "c\n"},
		{name: "keeps BOM", src: "\ufeffhello\nworld\n", edits: []Edit{{"hello", "bye"}}, want: "\ufeffbye\nworld\n"},
		{name: "mixed endings untouched outside the span", src: "a\r\nb\nc\r\n", edits: []Edit{{"c", "C"}}, want: "a\r\nb\nC\r\n"},
		{name: "smart quotes in file", src: "say(\u201chi\u201d)\nother \u201cq\u201d\n", edits: []Edit{{`say("hi")`, `say("yo")`}},
			want: "say(\"yo\")\nother \u201cq\u201d\n", norm: true},
		{name: "smart quotes in oldText", src: "it's -- fine\n", edits: []Edit{{"it\u2019s", "it is"}}, want: "it is -- fine\n", norm: true},
		{name: "dash", src: "a \u2014 b\nc \u2013 d\n", edits: []Edit{{"a - b", "ab"}}, want: "ab\nc \u2013 d\n", norm: true},
		{name: "trailing whitespace", src: "x = 1   \ny = 2\t\nz\n", edits: []Edit{{"x = 1\ny = 2", "xy"}}, want: "xy\t\nz\n", norm: true},
		{name: "NFKC", src: "\uff21\uff22C = 1\nkeep \u2018this\u2019\n", edits: []Edit{{"ABC = 1", "abc = 2"}}, want: "abc = 2\nkeep \u2018this\u2019\n", norm: true},
		{name: "unicode elsewhere kept", src: "caf\u00e9 \u201cq\u201d\nx\u00a0=\u00a01\n", edits: []Edit{{"x = 1", "x = 2"}}, want: "caf\u00e9 \u201cq\u201d\nx = 2\n", norm: true},
		{name: "normalised in a CRLF file", src: "a \u2014 b\r\nc\r\n", edits: []Edit{{"a - b\nc", "x\ny"}}, want: "x\r\ny\r\n", norm: true},
		{name: "exact wins over normalised", src: "\u201cq\u201d \"q\"", edits: []Edit{{`"q"`, "Q"}}, want: "\u201cq\u201d Q"},

		{name: "not found", src: "abc", edits: []Edit{{"xyz", "1"}},
			wantErr: "could not find oldText in f.txt: it must match the file exactly, including whitespace, indentation and line breaks"},
		{name: "not found index", src: "abc", edits: []Edit{{"a", "1"}, {"xyz", "1"}}, wantErr: "could not find edits[1].oldText in f.txt"},
		{name: "two occurrences", src: "x\nx\n", edits: []Edit{{"x", "y"}},
			wantErr: "found 2 occurrences of oldText in f.txt; it must match exactly once: add more context"},
		{name: "overlapping occurrences", src: "aaa", edits: []Edit{{"aa", "b"}}, wantErr: "found 2 occurrences"},
		{name: "normalised occurrences", src: "\u201cq\u201d\n\u201eq\u201f\n", edits: []Edit{{`"q"`, "Q"}}, wantErr: "found 2 occurrences"},
		{name: "empty oldText", src: "abc", edits: []Edit{{"", "x"}}, wantErr: "oldText is empty"},
		{name: "overlap", src: "abcdef", edits: []Edit{{"abcd", "1"}, {"cdef", "2"}}, wantErr: "edits[0] and edits[1] overlap in f.txt"},
		{name: "no change", src: "abc", edits: []Edit{{"b", "b"}}, wantErr: "the edits leave f.txt unchanged"},
		{name: "whitespace only oldText not fuzzy", src: "a  \nb", edits: []Edit{{"   ", "x"}}, wantErr: "could not find"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ApplyEdits("f.txt", tt.src, tt.edits)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != tt.want {
				t.Errorf("text = %q, want %q", r.Text, tt.want)
			}
			if (len(r.Normalized) > 0) != tt.norm {
				t.Errorf("normalized = %v, want %v", r.Normalized, tt.norm)
			}
			if r.Diff == "" || r.FirstChangedLine < 1 {
				t.Errorf("no diff: %q line %d", r.Diff, r.FirstChangedLine)
			}
		})
	}
}

func TestEditDiff(t *testing.T) {
	src := "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nl20\n"
	r, err := ApplyEdits("f.txt", src, []Edit{{"l2\n", ""}, {"l4\n", "four\n"}, {"l18", "x\ny"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `--- a/f.txt
+++ b/f.txt
@@ -1,7 +1,6 @@
 l1
-l2
 l3
-l4
+four
 l5
 l6
 l7
@@ -15,6 +14,7 @@
 l15
 l16
 l17
-l18
+x
+y
 l19
 l20
`
	if r.Diff != want {
		t.Errorf("diff:\n%s\nwant:\n%s", r.Diff, want)
	}
	if r.FirstChangedLine != 2 {
		t.Errorf("first changed line = %d, want 2", r.FirstChangedLine)
	}
	// Only the changed line of a multi-line oldText shows as changed.
	r, err = ApplyEdits("f.txt", "a\r\nb\r\nc\r\n", []Edit{{"a\nb\nc", "a\nB\nc"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"; r.Diff != want || r.FirstChangedLine != 2 {
		t.Errorf("diff = %q (line %d), want %q", r.Diff, r.FirstChangedLine, want)
	}
}

func TestEditTool(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	writeFile(t, ws+"/code.go", "\ufeffpackage x\r\n\r\nfunc A() {}\r\nfunc B() {}\r\n")
	if err := os.Chmod(ws+"/code.go", 0o600); err != nil {
		t.Fatal(err)
	}
	res := run(t, NewEdit(w), `{"path":"code.go","edits":[{"oldText":"func A() {}","newText":"func A() {\n\treturn\n}"},{"oldText":"func B","newText":"func C"}]}`)
	if res.IsError || res.Text() != "Edited code.go: 2 blocks replaced." {
		t.Fatalf("result: %s", res.Text())
	}
	got, _ := os.ReadFile(ws + "/code.go")
	if want := "\ufeffpackage x\r\n\r\nfunc A() {\r\n\treturn\r\n}\r\nfunc C() {}\r\n"; string(got) != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	if fi, _ := os.Stat(ws + "/code.go"); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600 kept", fi.Mode().Perm())
	}
	var d EditDetails
	if err := json.Unmarshal(res.Details, &d); err != nil || !strings.Contains(d.Diff, "+func C() {}") || d.FirstChangedLine != 3 {
		t.Errorf("details = %+v, %v", d, err)
	}

	// A failing edit among several changes nothing.
	res = run(t, NewEdit(w), `{"path":"code.go","edits":[{"oldText":"package x","newText":"package y"},{"oldText":"nowhere","newText":""}]}`)
	if !res.IsError || !strings.Contains(res.Text(), "could not find edits[1].oldText in code.go") {
		t.Errorf("result: %s", res.Text())
	}
	if again, _ := os.ReadFile(ws + "/code.go"); string(again) != string(got) {
		t.Error("a failed multi-edit changed the file")
	}

	// The single-edit form, and edits passed as a JSON string.
	res = run(t, NewEdit(w), `{"path":"a.txt","oldText":"alpha","newText":"ALPHA"}`)
	if res.IsError {
		t.Errorf("single-edit form: %s", res.Text())
	}
	res = run(t, NewEdit(w), `{"path":"a.txt","edits":"[{\"oldText\":\"ALPHA\",\"newText\":\"alpha\"}]"}`)
	if res.IsError {
		t.Errorf("edits as a JSON string: %s", res.Text())
	}

	errs := []struct{ name, args, want string }{
		{"missing file", `{"path":"nope.txt","edits":[{"oldText":"a","newText":"b"}]}`, "nope.txt does not exist; use write to create a new file"},
		{"no edits", `{"path":"a.txt"}`, "no edits given"},
		{"binary", `{"path":"bin","edits":[{"oldText":"a","newText":"b"}]}`, "bin is a binary file"},
		{"dotdot escape", `{"path":"../outside/secret","edits":[{"oldText":"secret","newText":"x"}]}`, "outside the workspace"},
		{"absolute escape", `{"path":"` + tmp + `/outside/secret","edits":[{"oldText":"secret","newText":"x"}]}`, "outside the workspace"},
		{"symlink escape", `{"path":"outfile","edits":[{"oldText":"secret","newText":"x"}]}`, "leads through a symlink"},
		{"symlinked dir escape", `{"path":"out/secret","edits":[{"oldText":"secret","newText":"x"}]}`, "leads through a symlink"},
		{"too large", `{"path":"huge.log","edits":[{"oldText":"a","newText":"b"}]}`, "huge.log is 32 MB, over the 32 MB edit works on"},
	}
	writeFile(t, ws+"/bin", "a\x00b")
	writeFile(t, ws+"/huge.log", "")
	if err := os.Truncate(filepath.Join(ws, "huge.log"), EditMaxBytes+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, NewEdit(w), tt.args)
			if !res.IsError || !strings.Contains(res.Text(), tt.want) {
				t.Errorf("got %q, want error containing %q", res.Text(), tt.want)
			}
		})
	}
	if b, _ := os.ReadFile(tmp + "/outside/secret"); string(b) != "secret needle\n" {
		t.Errorf("file outside the workspace changed: %q", b)
	}
}

// FuzzApplyEdits checks that an edit never panics, and that a successful
// one changes only one span of the file: the result is a prefix of the
// original, the new text, then a suffix of the original.
func FuzzApplyEdits(f *testing.F) {
	f.Add("a\nb\nc\n", "b", "B")
	f.Add("a\r\nb\r\n", "a\nb", "x\ny")
	f.Add("\ufeffx \u2014 y  \n", "x - y", "z")
	f.Add("say \u201chi\u201d\n", `say "hi"`, "bye")
	f.Add("\uff21\uff22\n\u00e9\u0301", "AB", "c")
	f.Add("aaa", "aa", "b")
	f.Add("e\u0301 x", "\u00e9", "E")
	f.Fuzz(func(t *testing.T, src, old, nw string) {
		r, err := ApplyEdits("f", src, []Edit{{old, nw}})
		if err != nil {
			return
		}
		if r.Text == src {
			t.Fatal("success without a change")
		}
		if utf8.ValidString(src) && utf8.ValidString(nw) && !utf8.ValidString(r.Text) {
			t.Fatalf("invalid UTF-8 from valid input: %q", r.Text)
		}
		if strings.Contains(src, "\r") || strings.Contains(nw, "\r") {
			return // newText may have taken the file's CRLF endings
		}
		if !strings.Contains(old, "\r") && len(r.Normalized) == 0 && strings.Count(src, old) == 1 {
			if want := strings.Replace(src, old, nw, 1); r.Text != want {
				t.Fatalf("exact edit = %q, want %q", r.Text, want)
			}
		}
		p := commonPrefix(src, r.Text)
		s := commonPrefix(reverse(src), reverse(r.Text))
		lo := max(0, len(r.Text)-s-len(nw))
		hi := min(p, len(r.Text)-len(nw))
		ok := false
		for k := lo; k <= hi && !ok; k++ {
			ok = r.Text[k:k+len(nw)] == nw
		}
		if !ok {
			t.Fatalf("result %q is not original prefix + %q + original suffix of %q", r.Text, nw, src)
		}
	})
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// BenchmarkApplyEdits edits one line near the end of a 10,000-line file
// (about 500 KB): by exact match, and by the normalised match, which maps
// the whole file.
func BenchmarkApplyEdits(b *testing.B) {
	var src strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&src, "\tx%05d := compute(%d) // “quoted” note — dash\n", i, i)
	}
	text := src.String()
	for _, bc := range []struct {
		name string
		edit Edit
	}{
		{"exact", Edit{"\tx09990 := compute(9990) // “quoted”", "\ty := 1"}},
		{"normalised", Edit{`	x09990 := compute(9990) // "quoted" note - dash`, "\ty := 1"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := ApplyEdits("f.go", text, []Edit{bc.edit}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Edits of one file from concurrent runs are serialised: none is lost.
func TestEditConcurrentSameFile(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	var src strings.Builder
	for i := range 20 {
		fmt.Fprintf(&src, "line a%02d\n", i)
	}
	writeFile(t, tmp+"/ws/shared.txt", src.String())
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			args := fmt.Sprintf(`{"path":"shared.txt","edits":[{"oldText":"a%02d","newText":"b%02d"}]}`, i, i)
			res, err := NewEdit(w).Execute(context.Background(), tool.Call{Name: "edit", Args: json.RawMessage(args)}, func(tool.Partial) {})
			if err != nil || res.IsError {
				t.Errorf("edit %d: %v %s", i, err, res.Text())
			}
		})
	}
	wg.Wait()
	got, _ := os.ReadFile(tmp + "/ws/shared.txt")
	if strings.Count(string(got), "line b") != 20 {
		t.Errorf("lost edits:\n%s", got)
	}
	if len(fileLocks.m) != 0 {
		t.Errorf("file locks left: %v", fileLocks.m)
	}
}
