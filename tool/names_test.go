package tool

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

var wirePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestNameMap(t *testing.T) {
	long := "mcp__server__" + strings.Repeat("x", 70)
	long2 := "mcp__server__" + strings.Repeat("x", 70) + "y"
	names := []string{
		"read", "mcp__github__get_issue", "github.get_issue", "github/get_issue",
		"a.b", "a_b", long, long2, "naïve", "", "x y",
	}
	m := NewNameMap(names)
	seen := map[string]string{}
	for _, n := range names {
		w := m.Wire(n)
		if !wirePattern.MatchString(w) {
			t.Errorf("Wire(%q) = %q is not provider-safe", n, w)
		}
		if prev, dup := seen[w]; dup {
			t.Errorf("Wire(%q) = Wire(%q) = %q", n, prev, w)
		}
		seen[w] = n
		if back, ok := m.Original(w); !ok || back != n {
			t.Errorf("Original(Wire(%q)) = %q, %v", n, back, ok)
		}
	}
	tests := []struct{ name, want string }{
		{"read", "read"},
		{"a_b", "a_b"},
		{"github.get_issue", "github_get_issue"},
		{"x y", "x_y"},
		{"naïve", "na__ve"},
	}
	for _, tt := range tests {
		if got := m.Wire(tt.name); got != tt.want {
			t.Errorf("Wire(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	// "a.b" collides with the safe "a_b" and "github/get_issue" with
	// "github.get_issue" once sanitised: the later ones get a hash.
	for _, n := range []string{"a.b", "github/get_issue", long, long2, ""} {
		if w := m.Wire(n); !regexp.MustCompile(`_[0-9a-f]{8}$`).MatchString(w) {
			t.Errorf("Wire(%q) = %q, want a hash suffix", n, w)
		}
	}
	if len(m.Wire(long)) != MaxWireNameLen {
		t.Errorf("long name maps to %d bytes", len(m.Wire(long)))
	}
	// The original name is understood on the way back too.
	if n, ok := m.Original("github.get_issue"); !ok || n != "github.get_issue" {
		t.Errorf("Original(original) = %q, %v", n, ok)
	}
	if n, ok := m.Original("nope"); ok || n != "nope" {
		t.Errorf("Original(unknown) = %q, %v", n, ok)
	}
	// Deterministic whatever the order.
	rev := slices.Clone(names)
	slices.Reverse(rev)
	m2 := NewNameMap(rev)
	for _, n := range names {
		if m.Wire(n) != m2.Wire(n) {
			t.Errorf("Wire(%q) depends on order: %q vs %q", n, m.Wire(n), m2.Wire(n))
		}
	}
	if m.Identity() || !NewNameMap([]string{"read", "bash"}).Identity() {
		t.Error("Identity is wrong")
	}
}

func TestNameMapMessages(t *testing.T) {
	m := NewNameMap([]string{"read", "fs.read"})
	specs := m.Specs([]llm.ToolSpec{{Name: "read"}, {Name: "fs.read"}})
	if specs[0].Name != "read" || specs[1].Name != "fs_read" {
		t.Errorf("specs = %+v", specs)
	}
	call := m.ToolCall(llm.ToolCall("1", "fs_read", nil))
	if call.Name != "fs.read" {
		t.Errorf("ToolCall name = %q", call.Name)
	}
	msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("hi"), llm.ToolCall("1", "fs.read", nil)}}
	w := m.WireMessage(msg)
	if w.Content[1].Name != "fs_read" || msg.Content[1].Name != "fs.read" {
		t.Errorf("WireMessage: %q (original now %q)", w.Content[1].Name, msg.Content[1].Name)
	}
	res := m.WireMessage(llm.Message{Role: llm.RoleToolResult, ToolName: "fs.read"})
	if res.ToolName != "fs_read" {
		t.Errorf("tool result name = %q", res.ToolName)
	}
}

func FuzzNameMap(f *testing.F) {
	f.Add("a.b", "a_b", "mcp/x")
	f.Add(strings.Repeat("z", 80), strings.Repeat("z", 81), "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		names := []string{a, b, c}
		m := NewNameMap(names)
		seen := map[string]string{}
		for _, n := range names {
			w := m.Wire(n)
			if !wirePattern.MatchString(w) {
				t.Fatalf("Wire(%q) = %q", n, w)
			}
			if prev, dup := seen[w]; dup && prev != n {
				t.Fatalf("Wire(%q) = Wire(%q)", n, prev)
			}
			seen[w] = n
			if back, _ := m.Original(w); back != n {
				t.Fatalf("Original(Wire(%q)) = %q", n, back)
			}
		}
	})
}

// Names with characters providers reject are renamed on the way out and
// restored on the way back.
func ExampleNameMap() {
	m := NewNameMap([]string{"read", "github.get_issue", "files/list"})
	wire := m.Wire("github.get_issue")
	back, _ := m.Original(wire)
	fmt.Println(m.Wire("read"), wire, m.Wire("files/list"), back)
	// Output: read github_get_issue files_list github.get_issue
}
