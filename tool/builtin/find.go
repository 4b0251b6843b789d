package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentloop/agentloop/tool"
)

// FindTool is the find tool: it lists the files and directories under a
// directory whose paths match a glob, honouring .gitignore. Results are
// paths relative to the workspace root, directories with a trailing slash.
type FindTool struct{ ws *Workspace }

// NewFind returns the find tool over ws.
func NewFind(ws *Workspace) *FindTool { return &FindTool{ws: ws} }

// Name returns "find".
func (*FindTool) Name() string { return "find" }

// Description tells the model how to use find.
func (*FindTool) Description() string {
	return fmt.Sprintf("Find files by glob under a directory of the workspace (default: its root), respecting .gitignore. "+
		"* and ? stay within a path element, ** spans directories, {a,b} gives alternatives; a pattern without / "+
		"matches names at any depth (*.go), one with / matches the path from the search directory (src/**/*.ts). "+
		"Paths come back relative to the workspace root, directories ending in /. At most %d results unless limit says otherwise.", FindDefaultLimit)
}

type findArgs struct {
	Pattern string `json:"pattern" jsonschema:"Glob to match, e.g. *.go, **/*_test.go, src/{a,b}/*.ts"`
	Path    string `json:"path,omitempty" jsonschema:"Directory to search, relative to the workspace root or absolute (default: the root)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"Most results to return"`
}

var findSchema = schemaOf[findArgs](atLeast(1, "limit"))

// Schema returns the arguments schema: pattern, path, limit.
func (*FindTool) Schema() json.RawMessage { return findSchema() }

// ConcurrencySafe reports true.
func (*FindTool) ConcurrencySafe(tool.Call) bool { return true }

// ReadOnly reports true.
func (*FindTool) ReadOnly() bool { return true }

// FindDetails is the Details of a find result.
type FindDetails struct {
	Results int `json:"results"`
	// TruncatedBy is "limit" or "bytes" when more paths matched.
	TruncatedBy string `json:"truncatedBy,omitempty"`
}

// Execute runs the search.
func (t *FindTool) Execute(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
	var a findArgs
	if err := tool.DecodeArgs(call, &a); err != nil {
		return tool.Result{}, err
	}
	if a.Path == "" {
		a.Path = "."
	}
	limit := a.Limit
	if limit <= 0 {
		limit = FindDefaultLimit
	}
	if strings.TrimSpace(a.Pattern) == "" {
		return tool.Result{}, fmt.Errorf("pattern is empty; give a glob such as *.go or **/*.md")
	}
	g, err := newPathGlob(a.Pattern)
	if err != nil {
		return tool.Result{}, err
	}
	start, err := t.ws.ResolveRead(a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	tr, name, err := t.ws.readTree(start)
	if err != nil {
		return tool.Result{}, err
	}
	defer tr.close()
	fi, err := fs.Stat(tr.fsys, name)
	if err != nil {
		return tool.Result{}, pathError(a.Path, err)
	}
	if !fi.IsDir() {
		return tool.Result{}, fmt.Errorf("%s is a file, not a directory; give find a directory to search", a.Path)
	}
	var (
		out strings.Builder
		d   FindDetails
	)
	err = walkFiles(ctx, tr, name, ancestorIgnores(tr, t.ws.Root(), name), func(abs, rel string, e fs.DirEntry) error {
		if !g.match(rel) {
			return nil
		}
		if d.Results == limit {
			d.TruncatedBy = "limit"
			return errStopWalk
		}
		name := t.ws.Rel(abs)
		if e.IsDir() {
			name += "/"
		}
		if out.Len()+len(name)+1 > ReadMaxBytes {
			d.TruncatedBy = "bytes"
			return errStopWalk
		}
		out.WriteString(name)
		out.WriteByte('\n')
		d.Results++
		return nil
	})
	if err != nil {
		return tool.Result{}, err
	}
	text := strings.TrimSuffix(out.String(), "\n")
	switch {
	case d.Results == 0:
		text = fmt.Sprintf("No files match %q in %s.", a.Pattern, a.Path)
	case d.TruncatedBy == "limit":
		text += fmt.Sprintf("\n\n[Stopped at %d results. Use limit=%d for more, or narrow the pattern.]", limit, limit*2)
	case d.TruncatedBy == "bytes":
		text += fmt.Sprintf("\n\n[Output stopped at %d KB after %d results. Narrow the pattern or the path.]", ReadMaxBytes/1024, d.Results)
	}
	res := tool.TextResult(text)
	res.Details = detailsJSON(d)
	return res, nil
}
