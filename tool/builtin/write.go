package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/tool"
)

// WriteTool is the write tool: it creates or overwrites a file with the
// given content, creating parent directories as needed. The file is
// replaced atomically.
type WriteTool struct{ ws *Workspace }

// NewWrite returns the write tool over ws.
func NewWrite(ws *Workspace) *WriteTool { return &WriteTool{ws: ws} }

// Name returns "write".
func (*WriteTool) Name() string { return "write" }

// Description tells the model how to use write.
func (*WriteTool) Description() string {
	return "Write a file in the workspace, replacing it if it exists. Parent directories are created. " +
		"To change part of an existing file, use edit instead."
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"Path of the file, relative to the workspace root or absolute"`
	Content string `json:"content" jsonschema:"The complete new content of the file"`
}

var writeSchema = schemaOf[writeArgs](nil)

// Schema returns the arguments schema: path, content.
func (*WriteTool) Schema() json.RawMessage { return writeSchema() }

// ConcurrencySafe reports false: writes run alone.
func (*WriteTool) ConcurrencySafe(tool.Call) bool { return false }

// ReadOnly reports false.
func (*WriteTool) ReadOnly() bool { return false }

// WriteDetails is the Details of a write result.
type WriteDetails struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
}

// Execute writes the file.
func (t *WriteTool) Execute(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
	var a writeArgs
	if err := tool.DecodeArgs(call, &a); err != nil {
		return tool.Result{}, err
	}
	if strings.HasSuffix(a.Path, "/") {
		return tool.Result{}, fmt.Errorf("path %q ends in /, which names a directory; give the path of a file", a.Path)
	}
	real, err := t.ws.ResolveWrite(a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	name, err := t.ws.writeName(real)
	if err != nil {
		return tool.Result{}, err
	}
	defer lockFile(real)()
	root := t.ws.dir
	created := false
	if fi, err := root.Stat(name); err == nil && fi.IsDir() {
		return tool.Result{}, fmt.Errorf("%s is a directory; give the path of a file", a.Path)
	} else if err != nil {
		created = true
	}
	if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return tool.Result{}, fmt.Errorf("create the directories of %s: %w", a.Path, pathError(filepath.Dir(a.Path), err))
	}
	if err := writeFileAtomic(root, name, []byte(a.Content)); err != nil {
		return tool.Result{}, fmt.Errorf("write %s: %w", a.Path, pathError(a.Path, err))
	}
	verb := "Overwrote"
	if created {
		verb = "Created"
	}
	res := tool.TextResult(fmt.Sprintf("%s %s: wrote %d bytes.", verb, a.Path, len(a.Content)))
	res.Details = detailsJSON(WriteDetails{Path: a.Path, Bytes: len(a.Content), Created: created})
	return res, nil
}
