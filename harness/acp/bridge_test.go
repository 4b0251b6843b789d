package acp_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/harness/acp"
	"github.com/agentloop/agentloop/harness/internal/toolserver"
	"github.com/agentloop/agentloop/tool"
)

// TestServeBridge: the bridge offers the tool server's tools on its stdio
// and forwards each call there, where the gate judges it (refused, the
// tool never runs); it returns once its stdin ends, leaving no goroutine
// behind (goleak in TestMain).
func TestServeBridge(t *testing.T) {
	var ran []string
	reg := noteRegistry(t, &ran)
	ts, err := toolserver.Serve(reg, func(_ context.Context, c tool.Call) (bool, string, func(context.Context, tool.Result)) {
		if strings.Contains(string(c.Args), "secret") {
			return false, "no secrets in notes", nil
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if err := acp.ServeBridge(t.Context(), ts.URL, "", io.NopCloser(strings.NewReader("")), nopCloser{io.Discard}); err == nil {
		t.Error("a bridge without a token started")
	}

	agentIn, bridgeOut := io.Pipe()
	bridgeIn, agentOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- acp.ServeBridge(context.Background(), ts.URL, ts.Token, bridgeIn, bridgeOut) }()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "agent", Version: "0"}, nil)
	cs, err := client.Connect(t.Context(), &mcpsdk.IOTransport{Reader: agentIn, Writer: agentOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tl, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "note" {
		t.Errorf("tools over the bridge %v, want [note]", names)
	}
	text := func(r *mcpsdk.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcpsdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "note", Arguments: map[string]any{"text": "plum"}})
	if err != nil || res.IsError || text(res) != "noted" {
		t.Errorf("allowed call: %v %+v", err, res)
	}
	res, err = cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "note", Arguments: map[string]any{"text": "a secret"}})
	if err != nil || !res.IsError || text(res) != "no secrets in notes" {
		t.Errorf("refused call: %v %+v", err, res)
	}
	if len(ran) != 1 {
		t.Errorf("the tool ran %d times, want once (the refused call must not run)", len(ran))
	}
	if err := cs.Close(); err != nil {
		t.Log(err)
	}
	if err := <-served; err != nil {
		t.Errorf("the bridge ended with %v after its stdin closed", err)
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// noteRegistry holds one tool, note, which answers "noted" and records the
// arguments of each call in ran.
func noteRegistry(t *testing.T, ran *[]string) *tool.Registry {
	t.Helper()
	note := &tool.Func{ToolName: "note", ToolDescription: "Write a note.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Run: func(_ context.Context, c tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			*ran = append(*ran, string(c.Args))
			return tool.TextResult("noted"), nil
		}}
	reg, err := tool.NewRegistry(note)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
