package runner

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// fakeSource is a tool.Source that counts its starts and closes.
type fakeSource struct {
	tools          []tool.Tool
	err            error
	starts, closes int
}

func (f *fakeSource) Start(context.Context) ([]tool.Tool, io.Closer, error) {
	f.starts++
	return f.tools, f, f.err
}
func (f *fakeSource) Close() error       { f.closes++; return nil }
func (f *fakeSource) Warnings() []string { return []string{"server x is not available"} }

// A source is started for each run and closed at its end; its tools are
// offered beside the run's own, and its warnings are the run's.
func TestToolSources(t *testing.T) {
	echo := &tool.Func{ToolName: "echo", Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult("echoed"), nil
	}}
	src := &fakeSource{tools: []tool.Tool{echo}}
	r := testRunner(&Config{ToolSources: []tool.Source{src}})
	m := faux.New(faux.Call("", "echo", map[string]string{}), faux.Say("done"))
	ev := &events{}
	res, err := r.Run(t.Context(), Request{Prompt: "go", Model: m, OnEvent: ev.add})
	if err != nil || !res.OK() {
		t.Fatalf("%v %+v", err, res)
	}
	if src.starts != 1 || src.closes != 1 {
		t.Errorf("started %d, closed %d times; want once each", src.starts, src.closes)
	}
	if w := ev.notices(EventWarning); len(w) != 1 || w[0].Message != "server x is not available" {
		t.Errorf("warnings %+v", w)
	}
	if tr := ev.notices(EventToolsReady); len(tr) != 1 || !slices.Equal(tr[0].Tools, []string{"echo"}) {
		t.Errorf("tools_ready %+v, want one listing the source's echo", tr)
	}
	if got := res.Messages[2].Text(); got != "echoed" {
		t.Errorf("tool result %q, want the source's tool to have run", got)
	}

	src.err = errors.New("cannot start")
	if _, err := r.Run(t.Context(), Request{Prompt: "go", Model: faux.New(faux.Say("x"))}); err == nil || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("a failing source: %v", err)
	}
	if src.closes != 2 {
		t.Errorf("a source that failed to start was not closed")
	}
}

// An embedder who uses no MCP links none of its modules: runner reaches
// MCP only through tool.Source.
func TestRunnerDoesNotLinkMCP(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "tool/mcp") || strings.Contains(dep, "modelcontextprotocol") {
			t.Errorf("runner depends on %s", dep)
		}
	}
}
