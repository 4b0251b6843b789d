package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/tool"
)

// BenchmarkCall measures one tool call round trip through the manager, per
// transport, against the in-process test server.
func BenchmarkCall(b *testing.B) {
	srv := newTestServer(false, nil)
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()
	for _, bc := range []struct {
		name string
		cfg  ServerConfig
	}{
		{"stdio", stdioServer("stdio")},
		{"http", ServerConfig{URL: ts.URL}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := Start(context.Background(), Config{Servers: map[string]ServerConfig{"s": bc.cfg}}, quiet())
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			var echo tool.Tool
			for _, t := range m.Tools() {
				if t.Name() == "mcp__s__echo" {
					echo = t
				}
			}
			if echo == nil {
				b.Fatalf("no echo tool: %+v", m.Status())
			}
			call := tool.Call{ID: "1", Name: echo.Name(), Args: json.RawMessage(`{"text":"hi"}`)}
			b.ReportAllocs()
			for b.Loop() {
				res, err := echo.Execute(context.Background(), call, func(tool.Partial) {})
				if err != nil || res.IsError {
					b.Fatalf("%v %v", res, err)
				}
			}
		})
	}
}
