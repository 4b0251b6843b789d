package harnesstest

import (
	"context"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// Tools is a registry of tools of those names that do nothing: the run's
// tools after its policy, for tests of what an engine may offer and run.
func Tools(t testing.TB, names ...string) *tool.Registry {
	t.Helper()
	var ts []tool.Tool
	for _, n := range names {
		ts = append(ts, &tool.Func{ToolName: n, Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			return tool.Result{}, nil
		}})
	}
	r, err := tool.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
