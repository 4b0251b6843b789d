package acp

import (
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/llm"
)

// A prompt's blocks become the run's text and images: an embedded file
// (what an editor attaches with @) under its URI, a link named.
func TestPromptContent(t *testing.T) {
	text, images := promptContent([]sdk.ContentBlock{
		sdk.TextBlock("fix this"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///w/a.go", Text: "package a\n"}}),
		sdk.ImageBlock("aGVsbG8=", "image/png"),
		sdk.ResourceLinkBlock("b.go", "file:///w/b.go"),
	})
	want := "fix this\n\nContents of file:///w/a.go:\n```\npackage a\n```\n\n(see file:///w/b.go)"
	if text != want {
		t.Fatalf("text %q, want %q", text, want)
	}
	if len(images) != 1 || images[0].Type != llm.ContentImage || images[0].MimeType != "image/png" || images[0].Data != "aGVsbG8=" {
		t.Fatalf("images %+v", images)
	}
}

// Each of our tools has its ACP kind, a title, and its path as a location
// (absolute, with the line a read starts at); a write is a diff with no
// old text, an edit one diff per replacement.
func TestToolCallShape(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		kind       sdk.ToolKind
		title      string
	}{
		{"read", `{"path":"a.go","offset":40}`, sdk.ToolKindRead, "Read a.go"},
		{"ls", `{}`, sdk.ToolKindRead, "List ."},
		{"tree", `{"path":"src"}`, sdk.ToolKindRead, "Tree src"},
		{"grep", `{"pattern":"TODO","path":"src"}`, sdk.ToolKindSearch, "Search `TODO` in src"},
		{"find", `{"pattern":"*.go"}`, sdk.ToolKindSearch, "Search `*.go`"},
		{"edit", `{"path":"a.go","edits":[{"oldText":"x","newText":"y"}]}`, sdk.ToolKindEdit, "Edit a.go"},
		{"write", `{"path":"/abs/b.go","content":"package b"}`, sdk.ToolKindEdit, "Write /abs/b.go"},
		{"bash", `{"command":"go test ./...\necho done"}`, sdk.ToolKindExecute, "Run `go test ./... …`"},
		{"mcp__github__search", `{"q":"x"}`, sdk.ToolKindOther, "mcp__github__search"},
	} {
		a := parseArgs([]byte(tc.args))
		if k := toolKind(tc.name); k != tc.kind {
			t.Errorf("%s: kind %s, want %s", tc.name, k, tc.kind)
		}
		if got := toolTitle(tc.name, a); got != tc.title {
			t.Errorf("%s: title %q, want %q", tc.name, got, tc.title)
		}
	}
	loc := locations("/w", parseArgs([]byte(`{"path":"a.go","offset":40}`)))
	if len(loc) != 1 || loc[0].Path != "/w/a.go" || loc[0].Line == nil || *loc[0].Line != 40 {
		t.Fatalf("locations %+v", loc)
	}
	w := diffs("/w", "write", parseArgs([]byte(`{"path":"b.go","content":"package b"}`)))
	if len(w) != 1 || w[0].Diff.Path != "/w/b.go" || w[0].Diff.OldText != nil || w[0].Diff.NewText != "package b" {
		t.Fatalf("write diff %+v", w)
	}
	e := diffs("/w", "edit", parseArgs([]byte(`{"path":"a.go","edits":[{"oldText":"x","newText":"y"},{"oldText":"p","newText":"q"}]}`)))
	if len(e) != 2 || *e[1].Diff.OldText != "p" || e[1].Diff.NewText != "q" {
		t.Fatalf("edit diffs %+v", e)
	}
	single := diffs("/w", "edit", parseArgs([]byte(`{"path":"a.go","oldText":"x","newText":"y"}`)))
	if len(single) != 1 || *single[0].Diff.OldText != "x" {
		t.Fatalf("single-edit diff %+v", single)
	}
}
