package harnesstest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/llm"
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

// GateAnswer runs one attempt on an engine that is a shell script
// (script: it asks about one call of its own and writes the answer it got
// to $HARNESSTEST_OUT), made with newHarness from the script's path and
// environment, with the run's tools of those names under policy. It
// returns that answer and whether the attempt's BeforeTool (the hooks and
// the approval) was asked.
func GateAnswer(t testing.TB, newHarness func(command string, env []string) harness.Harness, script string,
	tools []string, policy *tool.Policy) (answer string, asked bool) {
	t.Helper()
	dir := t.TempDir()
	bin, out := filepath.Join(dir, "engine"), filepath.Join(dir, "answer")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	a := &harness.Attempt{RunID: "r1", Prompt: llm.UserText("go"), Cwd: dir, Tools: Tools(t, tools...), ToolPolicy: policy,
		BeforeTool: func(_ context.Context, c tool.Call) (tool.Call, *tool.Result) { asked = true; return c, nil }}
	if _, err := newHarness(bin, append(os.Environ(), "HARNESSTEST_OUT="+out)).RunAttempt(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(got), asked
}
