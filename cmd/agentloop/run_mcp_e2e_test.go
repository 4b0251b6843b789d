package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 6: MCP tools reach the model through `agentloop run`: from
// --mcp-config, from a trusted workspace's .mcp.json, not from an untrusted
// one, and not at all with --no-mcp.
func TestE2EMCPTools(t *testing.T) {
	servers := greeterServers(t)
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

// greeterServers starts an MCP server over streamable HTTP with one tool,
// greet, and returns an MCP configuration naming it "greeter".
func greeterServers(t *testing.T) string {
	server := sdk.NewServer(&sdk.Implementation{Name: "greeter"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "greet", Description: "Greet someone."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + a.Name}}}, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	t.Cleanup(ts.Close)
	return `{"mcpServers":{"greeter":{"type":"http","url":"` + ts.URL + `"}}}`
}

// Issue 19: run_start comes before the MCP servers start (a refused prompt
// starts none), so --json says what the run offers once they have started,
// in a tools_ready line that lists the MCP tools beside the built-in ones.
func TestE2EMCPToolsReadyJSON(t *testing.T) {
	servers := greeterServers(t)
	script := writeFile(t, filepath.Join(t.TempDir(), "s.json"), `{"steps":[{"text":"hi"}]}`)
	home, ws := t.TempDir(), t.TempDir()
	env, out, errb := cliEnvWith(home, nil)
	args := []string{"run", "--json", "--script", script, "--cwd", ws,
		"--mcp-config", writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), servers), "hello"}
	if code := execute(context.Background(), env, args); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	var types []string
	var ready []string
	for _, ln := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev struct {
			Type  string   `json:"type"`
			Tools []string `json:"tools"`
		}
		if err := json.Unmarshal([]byte(ln), &ev); err != nil {
			t.Fatalf("%v: %s", err, ln)
		}
		types = append(types, ev.Type)
		if ev.Type == "tools_ready" {
			ready = ev.Tools
		}
	}
	if len(types) == 0 || types[0] != "run_start" || !slices.Contains(types, "tools_ready") ||
		slices.Index(types, "tools_ready") > slices.Index(types, "agent_start") {
		t.Fatalf("event types %v: want run_start first, then tools_ready before agent_start", types)
	}
	if !slices.Contains(ready, "mcp__greeter__greet") || !slices.Contains(ready, "read") {
		t.Errorf("tools_ready lists %v, want the MCP tool and the built-ins", ready)
	}
	if strings.Contains(errb.String(), "tools ready") {
		t.Errorf("tools_ready printed on stderr:\n%s", errb.String())
	}
}
