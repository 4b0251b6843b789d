package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

func ExampleStart() {
	// An MCP server with one tool, served over streamable HTTP.
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

	cfg, _ := mcp.Parse([]byte(`{"mcpServers":{"greeter":{"type":"http","url":"`+ts.URL+`"}}}`), nil)
	m, err := mcp.Start(context.Background(), cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	for _, s := range m.Status() {
		fmt.Println(s.Name, s.State, s.Tools)
	}
	reg, _ := tool.NewRegistry(m.Tools()...)
	res := reg.Execute(context.Background(), llm.ToolCall("1", "mcp__greeter__greet", json.RawMessage(`{"name":"Ada"}`)), nil)
	fmt.Println(res.Text())
	// Output:
	// greeter ready [mcp__greeter__greet]
	// Hello, Ada
}
