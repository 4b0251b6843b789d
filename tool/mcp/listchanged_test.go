package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/tool"
)

// refreshUntil calls Refresh until ok holds of the manager or a real
// second has gone by (the notification comes from another goroutine, after
// the server's own debounce), and returns the tools Refresh added.
func refreshUntil(t *testing.T, m *Manager, ok func() bool) []tool.Tool {
	t.Helper()
	var added []tool.Tool
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("the list change was not seen")
		}
		n, err := m.Refresh(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, n...)
		time.Sleep(10 * time.Millisecond)
	}
	return added
}

// A server that removes a tool and adds one (notifications/tools/list_changed):
// after Refresh the removed tool is not Available and a call of it says it
// was removed; the new tool is returned once, and listed again it is the
// same tool.
func TestRefreshFollowsListChanged(t *testing.T) {
	srv := newTestServer(false, nil)
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()
	m, err := Start(context.Background(), Config{Servers: map[string]ServerConfig{"s": {URL: ts.URL}}}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var echo *Tool
	for _, tl := range m.Tools() {
		if tl.Name() == "mcp__s__echo" {
			echo = tl.(*Tool)
		}
	}
	if echo == nil || !echo.Available() {
		t.Fatalf("no echo tool: %+v", m.Status())
	}
	if added, err := m.Refresh(context.Background()); err != nil || len(added) != 0 {
		t.Fatalf("a refresh with no change: %v %v", added, err)
	}

	srv.RemoveTools("echo")
	refreshUntil(t, m, func() bool { return !echo.Available() })
	res, err := echo.Execute(context.Background(), tool.Call{ID: "1", Name: echo.Name(), Args: json.RawMessage(`{"text":"hi"}`)}, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Text(), `MCP server "s" removed the tool mcp__s__echo during this run`) {
		t.Errorf("a call of the removed tool: %+v %v", res, err)
	}
	for _, tl := range m.Tools() {
		if tl.Name() == "mcp__s__echo" {
			t.Error("Tools still lists the removed tool")
		}
	}

	sdk.AddTool(srv, &sdk.Tool{Name: "later", Description: "Added later."},
		func(context.Context, *sdk.CallToolRequest, echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "later ran"}}}, nil, nil
		})
	var later tool.Tool
	added := refreshUntil(t, m, func() bool {
		for _, tl := range m.Tools() {
			if tl.Name() == "mcp__s__later" {
				later = tl
			}
		}
		return later != nil
	})
	if len(added) != 1 || added[0] != later {
		t.Errorf("added %v, want the new tool once", added)
	}
	res, err = later.Execute(context.Background(), tool.Call{ID: "2", Name: later.Name(), Args: json.RawMessage(`{"text":"x"}`)}, nil)
	if err != nil || res.IsError || res.Text() != "later ran" {
		t.Errorf("a call of the added tool: %+v %v", res, err)
	}

	srv.AddTool(&sdk.Tool{Name: "echo", Description: "Echo again.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "back"}}}, nil
		})
	if added := refreshUntil(t, m, echo.Available); len(added) != 0 {
		t.Errorf("a tool listed again came back as new: %v", added)
	}
}
