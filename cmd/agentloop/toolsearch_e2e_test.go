package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/internal/mcptest"
	"github.com/agentloop/agentloop/llm"
)

// capturedTools reads the tool definitions of every request in mockllm's
// -capture file, in order.
func capturedTools(t *testing.T, capture string) [][]llm.ToolSpec {
	t.Helper()
	data, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]llm.ToolSpec
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req struct {
			Tools []struct {
				Function struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			t.Fatalf("captured request: %v", err)
		}
		var specs []llm.ToolSpec
		for _, tl := range req.Tools {
			specs = append(specs, llm.ToolSpec{Name: tl.Function.Name, Description: tl.Function.Description, Parameters: tl.Function.Parameters})
		}
		out = append(out, specs)
	}
	return out
}

// genMCPConfig writes an .mcp.json whose server "gen" is this test binary
// serving n generated tools (TestMain), and returns its path.
func genMCPConfig(t *testing.T, n int) string {
	t.Helper()
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, filepath.Join(t.TempDir(), "mcp.json"), js(map[string]any{"mcpServers": map[string]any{
		"gen": map[string]any{"command": self, "env": map[string]string{mcptest.Env: fmt.Sprint(n)}}}}))
}

// Issue 28 through the built CLI against mockllm: 300 MCP tools on a
// 32K-token model. By default (--tool-search auto) the first request
// carries the built-in tools and tool_search, under 3,000 tokens of
// definitions (compact.ToolsTokens of the body mockllm captured); the
// model's search finds the tool it asked for, which the next request
// offers. With --tool-search off the definitions (about 50,000 tokens)
// would not fit the window: the run is refused, saying what to do, and
// nothing is sent.
func TestE2EToolSearch(t *testing.T) {
	const invoice = "mcp__gen__create_invoice"
	mcpConfig := genMCPConfig(t, 300)
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, reqs [][]llm.ToolSpec)
	}{
		{name: "auto", check: func(t *testing.T, reqs [][]llm.ToolSpec) {
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			first := specNames(reqs[0])
			if n := compact.ToolsTokens(reqs[0]); n >= 3000 || !slices.Contains(first, "tool_search") || slices.ContainsFunc(first, isMCP) {
				t.Errorf("first request: %d tokens of definitions, tools %v: want under 3,000, tool_search and no MCP tool", n, first)
			}
			if second := specNames(reqs[1]); !slices.Contains(second, invoice) {
				t.Errorf("the request after the search offers %v, want %s", second, invoice)
			}
		}},
		{name: "off", args: []string{"--tool-search", "off"}, check: func(t *testing.T, reqs [][]llm.ToolSpec) {
			// 304 definitions are about 50,000 tokens: more than the
			// 32K window, so the run is refused before any request.
			if len(reqs) != 0 {
				t.Errorf("%d requests sent with %d tools (%d tokens of definitions); want the run refused before any", len(reqs), len(reqs[0]), compact.ToolsTokens(reqs[0]))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "requests.jsonl")
			base := mockLLM(t, "-rounds", "1", "-tool", "tool_search", "-args", `{"query":"create invoice"}`, "-capture", capture)
			home, ws := t.TempDir(), t.TempDir()
			writeModels(t, home, 32_000)
			args := append([]string{"run", "--model", "openai/mock-model", "--base-url", base + "/v1", "--cwd", ws,
				"--no-session", "--mcp-config", mcpConfig}, tc.args...)
			code, _, errs := execCLI(t, []string{"OPENAI_API_KEY=sk-mock"}, home, append(args, "bill acme")...)
			if tc.name == "auto" && (code != 0 || !strings.Contains(errs, "→ tool_search")) {
				t.Fatalf("exit %d, want 0 and a tool_search call:\n%s", code, errs)
			}
			if tc.name == "off" && (code == 0 || !strings.Contains(errs, "more than the context window") || !strings.Contains(errs, "--tool-search on")) {
				t.Errorf("exit %d, want a failure that says the tools overflow the window and to use --tool-search on:\n%s", code, errs)
			}
			var reqs [][]llm.ToolSpec
			if _, err := os.Stat(capture); err == nil {
				reqs = capturedTools(t, capture)
			}
			if len(reqs) > 0 {
				t.Logf("%s: first request %d tools, %d tokens of definitions (exit %d)", tc.name, len(reqs[0]), compact.ToolsTokens(reqs[0]), code)
			}
			tc.check(t, reqs)
		})
	}
}

func TestE2EToolSearchFlags(t *testing.T) {
	for _, args := range [][]string{{"--tool-search", "sometimes"}, {"--tool-search-threshold", "0"}, {"--tool-search-threshold", "150"}} {
		code, _, errs := execCLI(t, nil, t.TempDir(), append([]string{"run", "--model", "faux/demo"}, append(args, "hi")...)...)
		if code != 2 || !strings.Contains(errs, args[0]) {
			t.Errorf("%v: exit %d, want 2 and a message naming the flag:\n%s", args, code, errs)
		}
	}
}

func specNames(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func isMCP(name string) bool { return strings.HasPrefix(name, "mcp__") }

// Issue 28.3: the search and the call of what it found work on every wire
// the test server speaks (Chat Completions, Anthropic Messages, the
// Responses API): each sees ordinary tool definitions and calls, and pairs
// them as the provider does.
func TestE2EToolSearchEveryWire(t *testing.T) {
	srv := &wireServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	home := t.TempDir()
	mcpConfig := genMCPConfig(t, 300)
	for name, model := range wireModels(t, home, ts.URL) {
		t.Run(name, func(t *testing.T) {
			srv.mu.Lock()
			srv.requests, srv.refused = nil, nil
			srv.script = func(n int) step {
				switch n {
				case 1:
					return step{id: "call_1", name: "tool_search", args: `{"query":"create invoice"}`}
				case 2:
					return step{id: "call_2", name: "mcp__gen__create_invoice", args: `{"project":"acme"}`}
				}
				return step{text: "done"}
			}
			srv.mu.Unlock()
			args := append([]string{"run", "--cwd", t.TempDir(), "--no-session", "--mcp-config", mcpConfig}, append(model, "bill acme")...)
			code, _, errs := runPlain(t, home, args...)
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if code != 0 || len(srv.requests) != 3 || len(srv.refused) > 0 {
				t.Fatalf("exit %d, %d requests, refused %q\n%s", code, len(srv.requests), srv.refused, errs)
			}
			var found, ran bool
			for i, it := range srv.requests[2] {
				r, ok := answer(srv.requests[2], i)
				if it.kind != "call" || !ok {
					continue
				}
				found = found || strings.Contains(r.text, "mcp__gen__create_invoice: Create a new invoice")
				ran = ran || strings.Contains(r.text, `create_invoice ran with {"project":"acme"}`)
			}
			if !found || !ran {
				t.Errorf("search result found the tool: %v; the tool ran: %v\n%+v", found, ran, srv.requests[2])
			}
		})
	}
}
