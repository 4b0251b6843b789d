package acp

import (
	"encoding/json"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/llm"
)

// How a tool call looks to an editor: its kind, title, locations and, for
// edits, diffs, all derived from the tool's name and arguments.

// toolKind is the ACP kind of one of our tools; MCP tools and the ones we
// do not know are "other".
func toolKind(name string) sdk.ToolKind {
	switch name {
	case "read", "ls", "tree":
		return sdk.ToolKindRead
	case "edit", "write":
		return sdk.ToolKindEdit
	case "grep", "find":
		return sdk.ToolKindSearch
	case "bash":
		return sdk.ToolKindExecute
	case "fetch", "web_fetch":
		return sdk.ToolKindFetch
	}
	return sdk.ToolKindOther
}

// callArgs are the arguments the mapping reads; the tools' own structs
// stay theirs.
type callArgs struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
	Command string `json:"command"`
	URL     string `json:"url"`
	Offset  int    `json:"offset"`
	Content string `json:"content"`
	OldText string `json:"oldText"`
	NewText string `json:"newText"`
	Edits   []struct {
		OldText string `json:"oldText"`
		NewText string `json:"newText"`
	} `json:"edits"`
}

func parseArgs(raw json.RawMessage) callArgs {
	var a callArgs
	_ = json.Unmarshal(raw, &a) // a call whose arguments are not an object has none of these
	return a
}

// toolTitle is what the editor shows as the call's title.
func toolTitle(name string, a callArgs) string {
	target := func(verb, what string) string {
		if what == "" {
			return verb
		}
		return verb + " " + what
	}
	switch name {
	case "read":
		return target("Read", a.Path)
	case "ls":
		return target("List", orString(a.Path, "."))
	case "tree":
		return target("Tree", orString(a.Path, "."))
	case "edit":
		return target("Edit", a.Path)
	case "write":
		return target("Write", a.Path)
	case "grep", "find":
		t := target("Search", quoteIf(a.Pattern))
		if a.Path != "" {
			t += " in " + a.Path
		}
		return t
	case "bash":
		cmd, _, cut := strings.Cut(strings.TrimSpace(a.Command), "\n")
		if len(cmd) > 120 {
			cmd, cut = cmd[:120], true
		}
		if cut {
			cmd += " …"
		}
		return target("Run", "`"+cmd+"`")
	case "fetch", "web_fetch":
		return target("Fetch", a.URL)
	}
	return name
}

func quoteIf(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// locations are the files a call touches: its path argument, made
// absolute against the session's cwd, with the line a read starts at.
func locations(cwd string, a callArgs) []sdk.ToolCallLocation {
	if a.Path == "" {
		return nil
	}
	loc := sdk.ToolCallLocation{Path: absPath(cwd, a.Path)}
	if a.Offset > 0 {
		loc.Line = sdk.Ptr(a.Offset)
	}
	return []sdk.ToolCallLocation{loc}
}

func absPath(cwd, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(cwd, p)
}

// diffs are an edit's or a write's changes as ACP diff content: one per
// replacement of an edit (the text replaced and its replacement), and the
// whole new content of a write (no old text: the tool replaces the file).
func diffs(cwd, name string, a callArgs) []sdk.ToolCallContent {
	if a.Path == "" {
		return nil
	}
	path := absPath(cwd, a.Path)
	switch name {
	case "write":
		return []sdk.ToolCallContent{sdk.ToolDiffContent(path, a.Content)}
	case "edit":
		var out []sdk.ToolCallContent
		for _, e := range a.Edits {
			out = append(out, sdk.ToolDiffContent(path, e.NewText, e.OldText))
		}
		if len(out) == 0 && (a.OldText != "" || a.NewText != "") {
			out = append(out, sdk.ToolDiffContent(path, a.NewText, a.OldText))
		}
		return out
	}
	return nil
}

// resultContent is a tool result's blocks as ACP content.
func resultContent(blocks []llm.Content) []sdk.ToolCallContent {
	var out []sdk.ToolCallContent
	for _, b := range blocks {
		switch b.Type {
		case llm.ContentText:
			out = append(out, sdk.ToolContent(sdk.TextBlock(b.Text)))
		case llm.ContentImage:
			out = append(out, sdk.ToolContent(sdk.ImageBlock(b.Data, b.MimeType)))
		}
	}
	return out
}

// rawInput is a call's arguments as the editor gets them: the JSON value,
// or the text when it is not JSON (a call cut off mid-arguments).
func rawInput(args json.RawMessage) any {
	if len(args) == 0 {
		return nil
	}
	if json.Valid(args) {
		return args
	}
	return string(args)
}
