package jsonpartial_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/llm/jsonpartial"
)

func TestObjectEnd(t *testing.T) {
	tests := []struct {
		in       string
		complete bool
	}{
		{``, false},
		{`  `, false},
		{`{`, false},
		{`{}`, true},
		{" \n{}\n ", true},
		{`{"a":1}`, true},
		{`{"a":1`, false},
		{`{"a":"}"`, false},
		{`{"a":"}"}`, true},
		{`{"a":"\"}"`, false},
		{`{"a":"\"}"}`, true},
		{`{"a":"\\"}`, true},
		{`{"a":"\\\"}"}`, true},
		{`{"a":{"b":[1,{"c":[]}]}}`, true},
		{`{"a":{"b":[1,{"c":[]}]}`, false},
		{`{"a":"{[[{"}`, true},
		{`{"a":1}x`, false},
		{`{"a":1} {"b":2}`, false},
		{`{"a":1}}`, false},
		{`{]`, false},
		{`{]}`, false},
		{`[{}]`, false},
		{`"{}"`, false},
		{`null`, false},
		{`{"a" 1}`, true}, // brackets balance; Strict rejects it
	}
	for _, tt := range tests {
		// Whole, then split at every byte: the answer is the same.
		for cut := 0; cut <= len(tt.in); cut++ {
			var o jsonpartial.ObjectEnd
			o.Feed(tt.in[:cut])
			if got := o.Feed(tt.in[cut:]); got != tt.complete || o.Complete() != got {
				t.Errorf("%q split at %d: complete %v, want %v", tt.in, cut, got, tt.complete)
			}
		}
	}
}

// For a valid object, the text is complete exactly from its closing brace
// on, one byte at a time.
func TestObjectEndEveryPrefix(t *testing.T) {
	text := ` {"command": "echo \"}\" \\", "n": [1, {"x": "]"}], "s": "caf\u00e9"} ` + "\n"
	last := bytes.LastIndexByte([]byte(text), '}')
	var o jsonpartial.ObjectEnd
	for i := 0; i < len(text); i++ {
		if got, want := o.Feed(text[i:i+1]), i >= last; got != want {
			t.Fatalf("after byte %d (%q): complete %v, want %v", i, text[:i+1], got, want)
		}
	}
}

func ExampleObjectEnd() {
	var o jsonpartial.ObjectEnd
	for _, frag := range []string{`{"path": "a}`, `.txt", "limit": 2`, `0}`} {
		fmt.Println(o.Feed(frag))
	}
	// Output:
	// false
	// false
	// true
}

// FuzzObjectEnd holds ObjectEnd to Strict: whatever the split, text that
// Strict accepts as a non-empty object is complete, and complete text is
// never followed by more than whitespace.
func FuzzObjectEnd(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"}\""}`, `{"a":[1,{"b":null}]} `, `{"a":1}x`, `[]`, `{]}`} {
		f.Add(s, uint(1))
	}
	f.Fuzz(func(t *testing.T, s string, cut uint) {
		c := int(cut % uint(len(s)+1))
		var o jsonpartial.ObjectEnd
		o.Feed(s[:c])
		got := o.Feed(s[c:])
		trimmed := bytes.Trim([]byte(s), " \t\n\v\f\r")
		_, err := jsonpartial.Strict(trimmed)
		if err == nil && len(trimmed) > 0 && !got {
			t.Fatalf("%q is a valid object but not complete", s)
		}
		if got && trimmed[len(trimmed)-1] != '}' {
			t.Fatalf("%q is complete but does not end with its brace", s)
		}
	})
}

func BenchmarkObjectEnd(b *testing.B) {
	text := `{"command": "grep -rn \"TODO\" ./internal ./cmd", "timeout": 120, "paths": ["a", "b", "c"]}`
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		var o jsonpartial.ObjectEnd
		for i := 0; i < len(text); i += 8 {
			o.Feed(text[i:min(i+8, len(text))])
		}
		if !o.Complete() {
			b.Fatal("not complete")
		}
	}
}
