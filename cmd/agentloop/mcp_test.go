package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPList(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "greeter"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "greet", Description: "Greet someone."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + a.Name}}}, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	defer ts.Close()

	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, "mcp.json"), `{"mcpServers":{"greeter":{"type":"http","url":"`+ts.URL+`"}}}`)
	writeFile(t, filepath.Join(ws, ".mcp.json"), `{"mcpServers":{"projsrv":{"command":"/bin/false"}}}`)
	env, out, errb := testEnv(home, "")
	if code := execute(t.Context(), env, []string{"mcp", "list", "--cwd", ws}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := out.String(); !strings.Contains(got, "greeter") || !strings.Contains(got, "mcp__greeter__greet") || !strings.Contains(got, "ready") {
		t.Errorf("mcp list:\n%s", got)
	}
	if strings.Contains(out.String(), "projsrv") || !strings.Contains(errb.String(), "not trusted") || !strings.Contains(errb.String(), "projsrv") {
		t.Errorf("untrusted project server: stdout %q, stderr %q", out.String(), errb.String())
	}
}
