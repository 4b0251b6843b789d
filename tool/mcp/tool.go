package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// ToolName is the name the model calls a server's tool by:
// mcp__<server>__<tool>. Names that providers refuse (dots, slashes, over
// 64 characters) are mapped by the tool layer, not here.
func ToolName(server, remote string) string { return "mcp__" + server + "__" + remote }

// Tool is one tool of an MCP server, as a tool.Tool.
type Tool struct {
	srv      *server
	name     string
	remote   string
	desc     string
	schema   json.RawMessage
	readOnly bool
	removed  bool // the server no longer lists it (guarded by srv.mu)
}

func newTool(s *server, t *sdk.Tool) *Tool {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return &Tool{
		srv:      s,
		name:     ToolName(s.name, t.Name),
		remote:   t.Name,
		desc:     desc,
		schema:   toolSchema(t.InputSchema),
		readOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint,
	}
}

// toolSchema turns a server's input schema into one the tool registry can
// compile: "$schema" (often draft-07) is dropped, the type is an object,
// and a schema that still does not compile is replaced by an open object
// schema, leaving validation to the server.
func toolSchema(in any) json.RawMessage {
	open := json.RawMessage(`{"type":"object"}`)
	raw, err := json.Marshal(in)
	if err != nil {
		return open
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return open
	}
	delete(m, "$schema")
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	out, err := json.Marshal(m)
	if err != nil {
		return open
	}
	var s jsonschema.Schema
	if json.Unmarshal(out, &s) != nil {
		return open
	}
	if _, err := s.Resolve(nil); err != nil {
		return open
	}
	return out
}

// Name returns mcp__<server>__<tool>.
func (t *Tool) Name() string { return t.name }

// Server returns the name of the tool's server.
func (t *Tool) Server() string { return t.srv.name }

// RemoteName returns the tool's own name on its server.
func (t *Tool) RemoteName() string { return t.remote }

// Description returns the server's description of the tool.
func (t *Tool) Description() string { return t.desc }

// Schema returns the tool's input schema.
func (t *Tool) Schema() json.RawMessage { return t.schema }

// ConcurrencySafe is true only for tools the server marks read-only, and
// only when Options.TrustAnnotations is set.
func (t *Tool) ConcurrencySafe(tool.Call) bool { return t.ReadOnly() }

// ReadOnly is true only for tools the server marks read-only, and only
// when Options.TrustAnnotations is set.
func (t *Tool) ReadOnly() bool { return t.readOnly && t.srv.m.opts.TrustAnnotations }

// Execute calls the tool on its server. A call that takes longer than the
// call timeout, a server that is gone and a failed call all become error
// results; a cancelled ctx returns ctx's error.
func (t *Tool) Execute(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
	s := t.srv
	s.mu.Lock()
	state, serr, cs, removed := s.state, s.err, s.session, t.removed
	s.mu.Unlock()
	if state == StateReady && removed {
		return tool.ErrorResult(fmt.Sprintf("MCP server %q removed the tool %s during this run (notifications/tools/list_changed), so it can no longer be called. Do not call it again; look for another tool.", s.name, t.name)), nil
	}
	if state != StateReady {
		why := string(state)
		if serr != nil {
			why = serr.Error()
		}
		return tool.ErrorResult(fmt.Sprintf("MCP server %q is not running (%s), so %s is unavailable. Do not call its tools again in this run.", s.name, why, t.name)), nil
	}
	timeout := s.m.opts.CallTimeout
	if s.cfg.Timeout > 0 {
		timeout = time.Duration(s.cfg.Timeout) * time.Millisecond
	}
	timeoutCtx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	callCtx, cancel := context.WithCancelCause(timeoutCtx)
	defer cancel(nil)
	untrack, ok := s.track(cancel)
	if !ok {
		return tool.ErrorResult(fmt.Sprintf("MCP server %q was stopped, so %s is unavailable.", s.name, t.name)), nil
	}
	defer untrack()
	args := call.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return tool.Result{}, ctx.Err()
		case errors.Is(context.Cause(callCtx), errClosed):
			return tool.ErrorResult(fmt.Sprintf("MCP server %q was stopped while %s was running; the call was cancelled.", s.name, t.name)), nil
		case errors.Is(timeoutCtx.Err(), context.DeadlineExceeded):
			return tool.ErrorResult(fmt.Sprintf("MCP tool %s did not answer within %s; the call was cancelled. Try again with a smaller request, or do without it.", t.name, timeout)), nil
		case errors.Is(err, sdk.ErrConnectionClosed):
			s.markExited(err)
			return tool.ErrorResult(fmt.Sprintf("MCP server %q has exited, so %s is unavailable: %v", s.name, t.name, err)), nil
		}
		return tool.ErrorResult(fmt.Sprintf("MCP tool %s failed: %v", t.name, err)), nil
	}
	return convertResult(res), nil
}

// convertResult turns an MCP result into a tool result: text and images
// as they are, other content as text the model can read.
func convertResult(res *sdk.CallToolResult) tool.Result {
	out := tool.Result{IsError: res.IsError, Content: []llm.Content{}}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			out.Content = append(out.Content, llm.Text(c.Text))
		case *sdk.ImageContent:
			out.Content = append(out.Content, llm.Image(base64.StdEncoding.EncodeToString(c.Data), c.MIMEType))
		case *sdk.AudioContent:
			out.Content = append(out.Content, llm.Text(fmt.Sprintf("[audio content, %s, %d bytes, not shown]", c.MIMEType, len(c.Data))))
		case *sdk.ResourceLink:
			out.Content = append(out.Content, llm.Text(fmt.Sprintf("[resource %s: %s]", c.Name, c.URI)))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				out.Content = append(out.Content, llm.Text(r.Text))
			case strings.HasPrefix(r.MIMEType, "image/") && len(r.Blob) > 0:
				out.Content = append(out.Content, llm.Image(base64.StdEncoding.EncodeToString(r.Blob), r.MIMEType))
			default:
				out.Content = append(out.Content, llm.Text(fmt.Sprintf("[resource %s, %s, %d bytes, not shown]", r.URI, r.MIMEType, len(r.Blob))))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				out.Content = append(out.Content, llm.Text(string(b)))
			}
		}
	}
	if len(out.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Content = append(out.Content, llm.Text(string(b)))
		}
	}
	if res.StructuredContent != nil {
		out.Details, _ = json.Marshal(map[string]any{"structuredContent": res.StructuredContent})
	}
	return out
}
