package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/agentloop/agentloop/tool"
)

// LsTool is the ls tool: it lists a directory, sorted case-insensitively,
// dotfiles included, directories marked with a trailing slash.
type LsTool struct{ ws *Workspace }

// NewLs returns the ls tool over ws.
func NewLs(ws *Workspace) *LsTool { return &LsTool{ws: ws} }

// Name returns "ls".
func (*LsTool) Name() string { return "ls" }

// Description tells the model how to use ls.
func (*LsTool) Description() string {
	return fmt.Sprintf("List a directory of the workspace (default: its root), sorted, dotfiles included; "+
		"directories end in /. At most %d entries unless limit says otherwise.", LsDefaultLimit)
}

type lsArgs struct {
	Path  string `json:"path,omitempty" jsonschema:"Directory to list, relative to the workspace root or absolute (default: the root)"`
	Limit int    `json:"limit,omitempty" jsonschema:"Most entries to return"`
}

var lsSchema = schemaOf[lsArgs](atLeast(1, "limit"))

// Schema returns the arguments schema: path, limit.
func (*LsTool) Schema() json.RawMessage { return lsSchema() }

// ConcurrencySafe reports true.
func (*LsTool) ConcurrencySafe(tool.Call) bool { return true }

// ReadOnly reports true.
func (*LsTool) ReadOnly() bool { return true }

// LsDetails is the Details of an ls result.
type LsDetails struct {
	Path    string `json:"path"`
	Entries int    `json:"entries"`
	Shown   int    `json:"shown"`
}

// Execute lists the directory.
func (t *LsTool) Execute(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
	var a lsArgs
	if err := tool.DecodeArgs(call, &a); err != nil {
		return tool.Result{}, err
	}
	if a.Path == "" {
		a.Path = "."
	}
	limit := a.Limit
	if limit <= 0 {
		limit = LsDefaultLimit
	}
	real, err := t.ws.ResolveRead(a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	tr, dir, err := t.ws.readTree(real)
	if err != nil {
		return tool.Result{}, err
	}
	defer tr.close()
	fi, err := fs.Stat(tr.fsys, dir)
	if err != nil {
		return tool.Result{}, pathError(a.Path, err)
	}
	if !fi.IsDir() {
		return tool.Result{}, fmt.Errorf("%s is a file, not a directory; use read to see it", a.Path)
	}
	entries, err := fs.ReadDir(tr.fsys, dir)
	if err != nil {
		return tool.Result{}, pathError(a.Path, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			// A symlink to a directory lists as one. For a link out of the
			// workspace that tells only that its target is a directory;
			// listing it is refused like any path outside.
			// (Only the type of the target is looked at, never its
			// contents, so this one stat is not made through the root.)
			if st, err := os.Stat(tr.abs(joinName(dir, name))); err == nil && st.IsDir() {
				isDir = true
			}
		}
		if isDir {
			name += "/"
		}
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := strings.ToLower(names[i]), strings.ToLower(names[j])
		if a != b {
			return a < b
		}
		return names[i] < names[j]
	})
	d := LsDetails{Path: a.Path, Entries: len(names), Shown: min(len(names), limit)}
	var out string
	switch {
	case len(names) == 0:
		out = fmt.Sprintf("[%s is an empty directory]", a.Path)
	case len(names) > limit:
		out = strings.Join(names[:limit], "\n") +
			fmt.Sprintf("\n\n[Showing %d of %d entries. Use limit=%d to see more.]", limit, len(names), len(names))
	default:
		out = strings.Join(names, "\n")
	}
	res := tool.TextResult(out)
	res.Details = detailsJSON(d)
	return res, nil
}
