// Package mcptest is an MCP server for tests and measurements that offers
// as many generated tools as asked for, with names, descriptions and
// schemas shaped like those of real servers (an issue tracker, a billing
// system, a calendar), and two tools that change its list mid-run so a
// client sees notifications/tools/list_changed. Test binaries serve it on
// stdio (ServeFromEnv) so that it runs as a real subprocess.
//
// It imports nothing from agentloop.
package mcptest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env is the environment variable that makes a test binary serve the
// generated tools on stdio instead of running tests: its value is the
// number of tools.
const Env = "AGENTLOOP_MCPTEST_TOOLS"

// The tools that change the list: RemoveTool removes the tool its "name"
// argument names; AddTool adds a tool of that name.
const (
	RemoveTool = "remove_tool"
	AddTool    = "add_tool"
)

var verbs = []struct{ verb, text string }{
	// %[1]s is the noun, %[2]s the system it lives in.
	{"create", "Create a new %[1]s in %[2]s. Returns the id of the created %[1]s."},
	{"get", "Get one %[1]s of %[2]s by its id, with every field."},
	{"list", "List the %[1]ss of %[2]s, newest first, filtered by the given fields; paginated."},
	{"update", "Update fields of an existing %[1]s in %[2]s. Fields not given are left unchanged."},
	{"delete", "Delete a %[1]s from %[2]s. This cannot be undone; the %[1]s's history is kept for 30 days."},
	{"search", "Search the %[1]ss of %[2]s by free text over titles and bodies; best matches first."},
}

var nouns = []struct{ noun, system string }{
	{"issue", "the issue tracker"}, {"pull_request", "the code host"}, {"repository", "the code host"},
	{"branch", "the code host"}, {"commit", "the code host"}, {"release", "the code host"},
	{"invoice", "the billing system"}, {"customer", "the billing system"}, {"subscription", "the billing system"},
	{"payment", "the billing system"}, {"refund", "the billing system"}, {"coupon", "the billing system"},
	{"event", "the calendar"}, {"calendar", "the calendar"}, {"reminder", "the calendar"},
	{"email", "the mailbox"}, {"draft", "the mailbox"}, {"label", "the mailbox"},
	{"contact", "the address book"}, {"group", "the address book"}, {"ticket", "the help desk"},
	{"macro", "the help desk"}, {"article", "the knowledge base"}, {"page", "the wiki"},
	{"space", "the wiki"}, {"comment", "the wiki"}, {"deployment", "the deploy service"},
	{"environment", "the deploy service"}, {"secret", "the vault"}, {"metric", "the monitoring service"},
	{"alert", "the monitoring service"}, {"dashboard", "the monitoring service"}, {"incident", "the on-call service"},
	{"schedule", "the on-call service"}, {"bucket", "the object store"}, {"object", "the object store"},
	{"table", "the data warehouse"}, {"query", "the data warehouse"}, {"job", "the scheduler"},
	{"pipeline", "the CI service"}, {"build", "the CI service"}, {"artifact", "the CI service"},
	{"user", "the directory"}, {"team", "the directory"}, {"role", "the directory"},
	{"file", "the drive"}, {"folder", "the drive"}, {"spreadsheet", "the drive"},
	{"message", "the chat service"}, {"channel", "the chat service"},
}

// Names returns the names of the first n generated tools, in order.
func Names(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		v, o := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		name := v.verb + "_" + o.noun
		if r := i / (len(verbs) * len(nouns)); r > 0 {
			name += "_" + strconv.Itoa(r+1)
		}
		out = append(out, name)
	}
	return out
}

// description is the description of the i-th generated tool.
func description(i int) string {
	v, o := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
	return fmt.Sprintf(v.text, o.noun, o.system)
}

// NewServer returns a server with n generated tools, then RemoveTool and
// AddTool when admin is set.
func NewServer(n int, admin bool) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	for i, name := range Names(n) {
		s.AddTool(generated(name, description(i), nouns[(i/len(verbs))%len(nouns)].noun), echo(name))
	}
	if admin {
		type nameIn struct {
			Name string `json:"name" jsonschema:"the tool's name on this server"`
		}
		sdk.AddTool(s, &sdk.Tool{Name: RemoveTool, Description: "Remove one of this server's tools (for tests of tools/list_changed)."},
			func(_ context.Context, _ *sdk.CallToolRequest, in nameIn) (*sdk.CallToolResult, any, error) {
				s.RemoveTools(in.Name)
				settle()
				return text("removed " + in.Name), nil, nil
			})
		sdk.AddTool(s, &sdk.Tool{Name: AddTool, Description: "Add a tool to this server (for tests of tools/list_changed)."},
			func(_ context.Context, _ *sdk.CallToolRequest, in nameIn) (*sdk.CallToolResult, any, error) {
				s.AddTool(generated(in.Name, "A tool added while the client was connected: "+in.Name+".", "thing"), echo(in.Name))
				settle()
				return text("added " + in.Name), nil, nil
			})
	}
	return s
}

// settle waits until the server has sent its (debounced) list_changed
// notification, so the client reads it before the call's result.
func settle() { time.Sleep(300 * time.Millisecond) }

func generated(name, desc, noun string) *sdk.Tool {
	return &sdk.Tool{Name: name, Description: desc, InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"id":      map[string]any{"type": "string", "description": "The " + noun + "'s id (for get, update and delete)."},
			"title":   map[string]any{"type": "string", "description": "A short title or name."},
			"body":    map[string]any{"type": "string", "description": "The text, in Markdown."},
			"labels":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Labels to filter by or set."},
			"limit":   map[string]any{"type": "integer", "description": "At most this many results (default 20)."},
			"project": map[string]any{"type": "string", "description": "The project or workspace it belongs to."},
		},
		"required": []string{"project"},
	}}
}

func echo(name string) sdk.ToolHandler {
	return func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text(fmt.Sprintf("%s ran with %s", name, req.Params.Arguments)), nil
	}
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// ServeFromEnv serves NewServer(n, true) on stdio and exits when Env holds
// n; otherwise it returns at once. A test binary calls it first in its
// TestMain.
func ServeFromEnv() {
	v := os.Getenv(Env)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: not a number\n", Env, v)
		os.Exit(2)
	}
	if err := NewServer(n, true).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
