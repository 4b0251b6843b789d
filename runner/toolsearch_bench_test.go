package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/internal/mcptest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/openai"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/builtin"
	"github.com/agentloop/agentloop/tool/mcp"
)

// BenchmarkToolDefinitions measures the tokens of tool definitions (the
// project's estimate, compact.ToolsTokens) in the requests of a run whose
// MCP server offers 20, 100 or 300 tools beside the built-in ones, with
// tool search off and on: the first request, and the one after the model
// searched once ("create invoice", 5 matches). Each iteration is one run
// against a Chat Completions server in process that captures the bodies.
//
//	go test -run '^$' -bench ToolDefinitions -benchtime 3x ./runner/
func BenchmarkToolDefinitions(b *testing.B) {
	for _, n := range []int{20, 100, 300} {
		server := mcptest.NewServer(n, false)
		hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
		src := &mcp.Source{Config: mcp.Config{Servers: map[string]mcp.ServerConfig{"gen": {Type: "http", URL: hs.URL}}}}
		for _, mode := range []ToolSearchMode{ToolSearchOff, ToolSearchOn} {
			b.Run(string(mode)+"/"+strconv.Itoa(n), func(b *testing.B) {
				var first, after int
				for b.Loop() {
					first, after = toolDefinitionTokens(b, src, mode)
				}
				b.ReportMetric(float64(first), "tokens/first-request")
				b.ReportMetric(float64(after), "tokens/after-search")
			})
		}
		hs.Close()
	}
}

func toolDefinitionTokens(b *testing.B, src tool.Source, mode ToolSearchMode) (first, after int) {
	srv := &chatServer{script: func(n int) chatStep {
		if n == 1 {
			return chatStep{id: "call_1", name: tool.SearchToolName, args: `{"query":"create invoice"}`}
		}
		return chatStep{text: "done"}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ws, err := builtin.NewWorkspace(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := tool.NewRegistry(append(builtin.New(ws), builtin.NewBash(builtin.BashOptions{Dir: ws.Root()}))...)
	if err != nil {
		b.Fatal(err)
	}
	info := llm.ModelInfo{Provider: "openai", ID: "m", API: llm.APIOpenAICompletions, ContextWindow: 1_000_000, MaxTokens: 4096}
	rn := testRunner(&Config{ToolSources: []tool.Source{src}})
	defer rn.Close()
	res, err := rn.Run(context.Background(), Request{Prompt: "bill acme", Model: openai.New(openai.Config{Info: info, APIKey: "k", BaseURL: ts.URL + "/v1"}),
		Info: info, Tools: reg, ToolSearch: &ToolSearch{Mode: mode}})
	if err != nil || !res.OK() || len(srv.bodies) != 2 {
		b.Fatalf("run: %v %+v (%d requests)", err, res, len(srv.bodies))
	}
	return compact.ToolsTokens(wireTools(b, srv.bodies[0])), compact.ToolsTokens(wireTools(b, srv.bodies[1]))
}
