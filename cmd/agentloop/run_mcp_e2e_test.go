package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 6: MCP tools reach the model through `agentloop run`: from
// --mcp-config, from a trusted workspace's .mcp.json, not from an untrusted
// one, and not at all with --no-mcp.
func TestE2EMCPTools(t *testing.T) {
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
	servers := `{"mcpServers":{"greeter":{"type":"http","url":"` + ts.URL + `"}}}`
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"),
		`{"steps":[{"toolCalls":[{"name":"mcp__greeter__greet","arguments":{"name":"Ada"}}]},{"text":"greeted"}]}`)

	tests := []struct {
		name      string
		project   bool // servers in the workspace's .mcp.json, else in --mcp-config
		args      []string
		called    bool
		stderrHas string
	}{
		{name: "--mcp-config", called: true},
		{name: "trusted workspace", project: true, args: []string{"--trust"}, called: true},
		{name: "untrusted workspace", project: true, called: false, stderrHas: "not trusted"},
		{name: "--no-mcp", args: []string{"--no-mcp"}, called: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home, ws := t.TempDir(), t.TempDir()
			args := []string{"run", "--script", script, "--cwd", ws}
			if tc.project {
				writeFile(t, filepath.Join(ws, ".mcp.json"), servers)
			} else {
				args = append(args, "--mcp-config", writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), servers))
			}
			env, out, errb := cliEnvWith(home, nil)
			code := execute(context.Background(), env, append(append(args, tc.args...), "greet Ada"))
			errs := errb.String()
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			failed := strings.Contains(errs, "✗ mcp__greeter__greet")
			if got := strings.Contains(errs, "→ mcp__greeter__greet") && !failed; got != tc.called {
				t.Errorf("tool called and succeeded: %v, want %v\n%s", got, tc.called, errs)
			}
			files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*.jsonl"))
			if len(files) != 1 {
				t.Fatalf("transcripts %v", files)
			}
			if data, _ := os.ReadFile(files[0]); strings.Contains(string(data), "Hello, Ada") != tc.called {
				t.Errorf("the server's answer in the transcript: %v, want %v", !tc.called, tc.called)
			}
			if !strings.Contains(errs, tc.stderrHas) || !strings.Contains(out.String(), "greeted") {
				t.Errorf("stdout %q, stderr lacks %q:\n%s", out.String(), tc.stderrHas, errs)
			}
		})
	}
}
