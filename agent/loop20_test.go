package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// loop20 is a 20-round tool loop on faux: each round the model says a few
// words and calls the step tool, which reports progress and answers; then
// it answers.
func loop20(tb testing.TB) (*faux.Model, *tool.Registry) {
	steps := make([]faux.Step, 0, 21)
	for i := 1; i <= 20; i++ {
		steps = append(steps, faux.Reply(faux.Text(fmt.Sprintf("Round %d: running the next step of the plan.", i)),
			faux.ToolCall("step", map[string]any{"n": i, "note": "keep going"})))
	}
	steps = append(steps, faux.Say("All 20 steps are done."))
	m := faux.New(steps...)
	m.Now = func() int64 { return 1_700_000_000_000 }
	st := &tool.Func{ToolName: "step", ToolDescription: "Runs one step of the plan.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"note":{"type":"string"}},"required":["n"]}`),
		Run: func(_ context.Context, c tool.Call, update func(tool.Partial)) (tool.Result, error) {
			update(tool.Partial{Content: []llm.Content{llm.Text("working")}})
			return tool.TextResult("step " + string(c.Args) + " done"), nil
		}}
	return m, registry(tb, st)
}

// Loop20 is loop20 for the external tests of this package.
var Loop20 = loop20
