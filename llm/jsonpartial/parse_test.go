package jsonpartial_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm/jsonpartial"
)

func TestParse(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, `{}`},
		{`   `, `{}`},
		{`{`, `{}`},
		{`{"`, `{}`},
		{`{"pa`, `{}`},
		{`{"path"`, `{}`},
		{`{"path":`, `{}`},
		{`{"path": "`, `{"path":""}`},
		{`{"path": "/tmp/a`, `{"path":"/tmp/a"}`},
		{`{"path": "/tmp/a"`, `{"path":"/tmp/a"}`},
		{`{"path": "/tmp/a",`, `{"path":"/tmp/a"}`},
		{`{"path": "/tmp/a", "n": 1`, `{"path":"/tmp/a","n":1}`},
		{`{"n": -`, `{}`},
		{`{"n": 1.`, `{"n":1}`},
		{`{"n": 1e`, `{"n":1}`},
		{`{"ok": tr`, `{"ok":true}`},
		{`{"ok": f`, `{"ok":false}`},
		{`{"v": n`, `{"v":null}`},
		{`{"s": "a\`, `{"s":"a"}`},
		{`{"s": "a\u00`, `{"s":"a"}`},
		{`{"s": "a\u00e9`, `{"s":"a\u00e9"}`},
		{`{"s": "a\n`, `{"s":"a\n"}`},
		{"{\"s\": \"caf\xc3", `{"s":"caf"}`},
		{`{"a": [1, 2`, `{"a":[1,2]}`},
		{`{"a": [1, 2,`, `{"a":[1,2]}`},
		{`{"a": [{"b": "c`, `{"a":[{"b":"c"}]}`},
		{`{"a": {"b": {`, `{"a":{"b":{}}}`},
		{`[1, "x`, `[1,"x"]`},
		{`{"a":1}`, `{"a":1}`},
		{`{"a": 1}  `, `{"a": 1}`},
		{`not json`, `{}`},
		{`{"a" 1`, `{}`},
		{`{"a": 01`, `{}`},
		{`{"a": "x" "b"`, `{}`},
		{"{\"a\": \"x\ny\"", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := jsonpartial.Parse([]byte(tt.in))
			if string(got) != tt.want {
				t.Errorf("Parse(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("Parse(%q) = %s is not valid JSON", tt.in, got)
			}
		})
	}
}

// Every prefix of a real argument object parses to valid JSON whose keys
// are a subset of the final ones, and the full text parses to itself.
func TestParseEveryPrefix(t *testing.T) {
	docs := []string{
		`{"command":"ls -la /tmp","timeout":30,"env":{"A":"1","B":[true,false,null]},"note":"caf\u00e9 \"quoted\" \\ back","x":-1.5e+3}`,
		`{"path":"notes/日本語.md","content":"line1\nline2\n\ttabbed","lines":[1,2,3],"nested":[[],[{}]]}`,
		`{}`,
	}
	for _, doc := range docs {
		var final map[string]any
		if err := json.Unmarshal([]byte(doc), &final); err != nil {
			t.Fatal(err)
		}
		for i := 0; i <= len(doc); i++ {
			got := jsonpartial.Parse([]byte(doc[:i]))
			var m map[string]any
			if err := json.Unmarshal(got, &m); err != nil {
				t.Fatalf("prefix %q: Parse = %s: %v", doc[:i], got, err)
			}
			for k := range m {
				if _, ok := final[k]; !ok {
					t.Fatalf("prefix %q: key %q is not in the final object", doc[:i], k)
				}
			}
		}
		if got := jsonpartial.Parse([]byte(doc)); string(got) != doc {
			t.Errorf("full text: Parse = %s", got)
		}
	}
}

func TestStrict(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{``, `{}`, false},
		{"  \n", `{}`, false},
		{`{}`, `{}`, false},
		{` {"a":1} `, `{"a":1}`, false},
		{`{"a":`, ``, true},
		{`{"a":1}}`, ``, true},
		{`[1]`, ``, true},
		{`"str"`, ``, true},
		{`null`, ``, true},
	}
	for _, tt := range tests {
		got, err := jsonpartial.Strict([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("Strict(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Strict(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestInvalid(t *testing.T) {
	raw := `{"path": "/tmp/a", "content": "unterminated`
	args := jsonpartial.Invalid([]byte(raw))
	if !json.Valid(args) || !jsonpartial.IsInvalid(args) {
		t.Fatalf("Invalid = %s", args)
	}
	var back string
	if err := json.Unmarshal(args, &back); err != nil || back != raw {
		t.Fatalf("Invalid does not keep the raw text: %q, %v", back, err)
	}
	if jsonpartial.IsInvalid(json.RawMessage(`{"a":1}`)) {
		t.Fatal("an object was reported invalid")
	}
}

func ExampleParse() {
	stream := []string{`{"path": "/tmp/no`, `tes.md", "lim`, `it": 2`, `0}`}
	var raw []byte
	for _, frag := range stream {
		raw = append(raw, frag...)
		fmt.Println(string(jsonpartial.Parse(raw)))
	}
	final, err := jsonpartial.Strict(raw)
	fmt.Println(string(final), err)
	// Output:
	// {"path":"/tmp/no"}
	// {"path":"/tmp/notes.md"}
	// {"path":"/tmp/notes.md","limit":2}
	// {"path": "/tmp/notes.md", "limit": 20}
	// {"path": "/tmp/notes.md", "limit": 20} <nil>
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":`, `{"a":[1,2`, `{"s":"\u00`, `[tr`, `{"a":{"b":"c\\`, `{"n":-1.5e`, `"x`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := jsonpartial.Parse([]byte(in))
		if !json.Valid(got) {
			t.Fatalf("Parse(%q) = %q, not valid JSON", in, got)
		}
		if json.Valid([]byte(in)) && strings.TrimSpace(in) != "" && string(got) != strings.TrimSpace(in) {
			t.Fatalf("Parse changed valid JSON %q to %q", in, got)
		}
		if s, err := jsonpartial.Strict([]byte(in)); err == nil {
			if !json.Valid(s) || s[0] != '{' {
				t.Fatalf("Strict(%q) = %q", in, s)
			}
		} else if !json.Valid(jsonpartial.Invalid([]byte(in))) {
			t.Fatalf("Invalid(%q) is not valid JSON", in)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	doc := []byte(`{"path":"src/main.go","content":"` + strings.Repeat(`package main\nfunc main() {}\n`, 40) + `","mode":"overwrite"}`)
	cut := doc[:len(doc)*2/3]
	b.SetBytes(int64(len(cut)))
	b.ReportAllocs()
	for b.Loop() {
		jsonpartial.Parse(cut)
	}
}
