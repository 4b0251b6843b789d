package builtin

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// run calls t with args through a registry, as the agent loop does, so the
// schema validation and error-to-result conversion are exercised too.
func run(t testing.TB, tl tool.Tool, args string) tool.Result {
	t.Helper()
	reg, err := tool.NewRegistry(tl)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Execute(context.Background(), llm.ToolCall("call-1", tl.Name(), json.RawMessage(args)), nil)
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// numbered returns n lines "line 1" ... "line n", each ending in "\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRead(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	ws := filepath.Join(tmp, "ws")
	// exactly ReadMaxBytes: 1024 lines of 49 bytes + "\n".
	line50 := strings.Repeat("x", 49) + "\n"
	writeFile(t, ws+"/exact-bytes.txt", strings.Repeat(line50, ReadMaxBytes/50))
	writeFile(t, ws+"/over-bytes.txt", strings.Repeat(line50, ReadMaxBytes/50)+"y\n")
	writeFile(t, ws+"/2000.txt", numbered(2000))
	writeFile(t, ws+"/2001.txt", numbered(2001))
	writeFile(t, ws+"/small.txt", "one\ntwo\r\nthree")
	writeFile(t, ws+"/empty.txt", "")
	writeFile(t, ws+"/long.txt", strings.Repeat("é", 2500)+"\nshort\n")
	writeFile(t, ws+"/bin.dat", "ELF\x00\x01\x02")
	writeFile(t, ws+"/pic.png", "\x89PNG\r\n\x1a\n\x00\x00rest")
	writeFile(t, ws+"/pic.webp", "RIFF\x10\x00\x00\x00WEBPVP8 ")

	tests := []struct {
		name, args string
		want       []string // substrings of the text
		notWant    []string
		wantErr    string
	}{
		{name: "small file", args: `{"path":"small.txt"}`, want: []string{"one\ntwo\nthree"}, notWant: []string{"offset=", "\r"}},
		{name: "offset and limit", args: `{"path":"2001.txt","offset":10,"limit":3}`,
			want: []string{"line 10\nline 11\nline 12\n\n[1989 more lines in the file. Continue with offset=13.]"}, notWant: []string{"line 9\n", "line 13"}},
		{name: "limit to the end", args: `{"path":"small.txt","offset":2,"limit":2}`, want: []string{"two\nthree"}, notWant: []string{"offset="}},
		{name: "exactly 2000 lines", args: `{"path":"2000.txt"}`, want: []string{"line 1\n", "line 2000"}, notWant: []string{"offset="}},
		{name: "2001 lines", args: `{"path":"2001.txt"}`,
			want: []string{"line 2000\n\n[Showing lines 1-2000 of 2001 (2000-line limit). Continue with offset=2001.]"}, notWant: []string{"line 2001"}},
		{name: "read on", args: `{"path":"2001.txt","offset":2001}`, want: []string{"line 2001"}, notWant: []string{"offset="}},
		{name: "exactly 51200 bytes", args: `{"path":"exact-bytes.txt"}`, notWant: []string{"offset=", "limit"}},
		{name: "over 51200 bytes", args: `{"path":"over-bytes.txt"}`,
			want: []string{"[Showing lines 1-1024 of 1025 (50 KB limit). Continue with offset=1025.]"}, notWant: []string{"y"}},
		{name: "long line cut", args: `{"path":"long.txt"}`,
			want: []string{strings.Repeat("é", 2000) + " [… line cut at 2000 characters]\nshort"}, notWant: []string{strings.Repeat("é", 2001)}},
		{name: "empty", args: `{"path":"empty.txt"}`, want: []string{"[empty.txt is empty]"}},
		{name: "offset past end", args: `{"path":"small.txt","offset":9}`, wantErr: "offset 9 is past the end of small.txt, which has 3 lines"},
		{name: "binary", args: `{"path":"bin.dat"}`, wantErr: "bin.dat is a binary file (application/octet-stream); read returns text, and PNG, JPEG, GIF or WebP images"},
		{name: "directory", args: `{"path":"sub"}`, wantErr: "sub is a directory; use ls to list it"},
		{name: "missing", args: `{"path":"nope.txt"}`, wantErr: "nope.txt does not exist"},
		{name: "dotdot escape", args: `{"path":"../outside/secret"}`, wantErr: "outside the workspace"},
		{name: "absolute escape", args: `{"path":"` + tmp + `/outside/secret"}`, wantErr: "outside the workspace"},
		{name: "symlink escape", args: `{"path":"outfile"}`, wantErr: "leads through a symlink"},
		{name: "symlinked dir escape", args: `{"path":"out/secret"}`, wantErr: "leads through a symlink"},
		{name: "no path", args: `{}`, wantErr: "Invalid arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, NewRead(w), tt.args)
			text := res.Text()
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(text, tt.wantErr) {
					t.Fatalf("got %q (isError %v), want error containing %q", text, res.IsError, tt.wantErr)
				}
				return
			}
			if res.IsError {
				t.Fatalf("unexpected error: %s", text)
			}
			for _, s := range tt.want {
				if !strings.Contains(text, s) {
					t.Errorf("text lacks %q:\n%s", s, tail(text))
				}
			}
			for _, s := range tt.notWant {
				if strings.Contains(text, s) {
					t.Errorf("text has %q:\n%s", s, tail(text))
				}
			}
		})
	}

	t.Run("exactly 51200 bytes returns all", func(t *testing.T) {
		res := run(t, NewRead(w), `{"path":"exact-bytes.txt"}`)
		if got := len(res.Text()) + 1; got != ReadMaxBytes {
			t.Errorf("returned %d bytes (+1 for the final newline), want %d", got, ReadMaxBytes)
		}
	})
	t.Run("images", func(t *testing.T) {
		for name, mime := range map[string]string{"pic.png": "image/png", "pic.webp": "image/webp"} {
			res := run(t, NewRead(w), `{"path":"`+name+`"}`)
			if res.IsError || len(res.Content) != 2 || res.Content[1].Type != llm.ContentImage || res.Content[1].MimeType != mime {
				t.Errorf("%s: got %+v", name, res)
			}
		}
	})
	t.Run("details", func(t *testing.T) {
		res := run(t, NewRead(w), `{"path":"2001.txt"}`)
		var d ReadDetails
		if err := json.Unmarshal(res.Details, &d); err != nil {
			t.Fatal(err)
		}
		want := ReadDetails{Path: "2001.txt", FirstLine: 1, LastLine: 2000, TotalLines: 2001, TruncatedBy: "lines"}
		if d != want {
			t.Errorf("details = %+v, want %+v", d, want)
		}
	})
}

func TestReadHugeLine(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	// A short line, then a 3 MB one: the total lies beyond the counting
	// budget, so it is left out.
	writeFile(t, tmp+"/ws/huge.txt", "first\n"+strings.Repeat("a", 3<<20)+"\nnext\n")
	res := run(t, NewRead(w), `{"path":"huge.txt","limit":1}`)
	if res.IsError || res.Text() != "first\n\n[The file goes on. Continue with offset=2.]" {
		t.Errorf("got %q", tail(res.Text()))
	}
	res = run(t, NewRead(w), `{"path":"huge.txt","offset":2}`)
	want := strings.Repeat("a", ReadMaxLineChars) + " [… line cut at 2000 characters]\nnext"
	if res.IsError || res.Text() != want {
		t.Errorf("the huge line: %q", tail(res.Text()))
	}
	res = run(t, NewRead(w), `{"path":"huge.txt","offset":3}`)
	if res.IsError || res.Text() != "next" {
		t.Errorf("offset past the huge line: %q", tail(res.Text()))
	}
	writeFile(t, tmp+"/ws/three.txt", "a\nb\nc\n")
	res = run(t, NewRead(w), `{"path":"three.txt","limit":2}`)
	if res.Text() != "a\nb\n\n[1 more line in the file. Continue with offset=3.]" {
		t.Errorf("one more line: %q", res.Text())
	}
}

func tail(s string) string {
	if len(s) > 300 {
		return "…" + s[len(s)-300:]
	}
	return s
}

// BenchmarkReadHead reads the first 2,000 lines of a 5 MB and a 50 MB
// file. The cost must not grow with the file.
func BenchmarkReadHead(b *testing.B) {
	dir := b.TempDir()
	for _, mb := range []int{5, 50} {
		path := fmt.Sprintf("%s/f%d.txt", dir, mb)
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		line := []byte("a line of twenty b\n") // 19 bytes: 2,000 lines fit in 50 KB
		for written := 0; written < mb<<20; written += len(line) {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
	w, err := NewWorkspace(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := NewRead(w)
	for _, mb := range []int{5, 50} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			call := tool.Call{Name: "read", Args: json.RawMessage(fmt.Sprintf(`{"path":"f%d.txt"}`, mb))}
			b.ReportAllocs()
			for b.Loop() {
				res, err := r.Execute(context.Background(), call, func(tool.Partial) {})
				if err != nil || !strings.Contains(res.Text(), "Continue with offset=2001.") {
					b.Fatal(err, tail(res.Text()))
				}
			}
		})
	}
}

func TestNotRegularFile(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	if err := syscall.Mkfifo(tmp+"/ws/pipe", 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, tc := range []struct {
		tl   tool.Tool
		args string
	}{
		{NewRead(w), `{"path":"pipe"}`},
		{NewGrep(w), `{"pattern":"x","path":"pipe"}`},
		{NewEdit(w), `{"path":"pipe","edits":[{"oldText":"a","newText":"b"}]}`},
	} {
		res := run(t, tc.tl, tc.args)
		if !res.IsError || !strings.Contains(res.Text(), "pipe is not a regular file") {
			t.Errorf("%s on a FIFO: %q", tc.tl.Name(), res.Text())
		}
	}
	// A FIFO met while walking is skipped, not opened.
	if res := run(t, NewGrep(w), `{"pattern":"alpha"}`); res.Text() != "a.txt:1: alpha" {
		t.Errorf("grep over a tree with a FIFO: %q", res.Text())
	}
}

func TestReadImageScaled(t *testing.T) {
	w, tmp := newTestWorkspace(t, nil)
	encode := func(name string, wd, ht int, jpg bool) {
		img := image.NewRGBA(image.Rect(0, 0, wd, ht))
		for i := range img.Pix {
			img.Pix[i] = uint8(i * 7)
		}
		var buf bytes.Buffer
		if jpg {
			if err := jpeg.Encode(&buf, img, nil); err != nil {
				t.Fatal(err)
			}
		} else if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		writeFile(t, tmp+"/ws/"+name, buf.String())
	}
	encode("small.png", 10, 20, false)
	encode("wide.png", 2200, 100, false)
	encode("tall.jpg", 100, 2200, true)
	tests := []struct {
		name, mime, note string
		w, h             int
	}{
		{"small.png", "image/png", "Image small.png (image/png, 10x20, ", 10, 20},
		{"wide.png", "image/png", "Image wide.png (image/png, 2000x90 scaled down from 2200x100, ", 2000, 90},
		{"tall.jpg", "image/jpeg", "Image tall.jpg (image/jpeg, 90x2000 scaled down from 100x2200, ", 90, 2000},
	}
	for _, tt := range tests {
		res := run(t, NewRead(w), `{"path":"`+tt.name+`"}`)
		if res.IsError || len(res.Content) != 2 || !strings.HasPrefix(res.Text(), tt.note) {
			t.Errorf("%s: %q", tt.name, res.Text())
			continue
		}
		img := res.Content[1]
		data, err := base64.StdEncoding.DecodeString(img.Data)
		if err != nil {
			t.Fatal(err)
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width != tt.w || cfg.Height != tt.h || "image/"+format != tt.mime || img.MimeType != tt.mime {
			t.Errorf("%s: sent %s %dx%d (%v), want %s %dx%d", tt.name, format, cfg.Width, cfg.Height, err, tt.mime, tt.w, tt.h)
		}
	}
}
