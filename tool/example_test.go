package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// A registry carries out the model's tool-call blocks: it finds the tool,
// coerces and validates the arguments ("3" becomes 3), and turns every
// failure into an error result the model can read.
func ExampleRegistry_Execute() {
	add := &tool.Func{
		ToolName:        "add",
		ToolDescription: "Add two integers.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
		Concurrent: true,
		Run: func(_ context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			var args struct{ A, B int }
			if err := json.Unmarshal(call.Args, &args); err != nil {
				return tool.Result{}, err
			}
			return tool.TextResult(fmt.Sprint(args.A + args.B)), nil
		},
	}
	reg, err := tool.NewRegistry(add)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, block := range []llm.Content{
		llm.ToolCall("1", "add", json.RawMessage(`{"a":2,"b":"3"}`)),
		llm.ToolCall("2", "sub", json.RawMessage(`{"a":2,"b":3}`)),
	} {
		res := reg.Execute(ctx, block, nil)
		fmt.Printf("%s: %s (error: %v)\n", block.Name, res.Text(), res.IsError)
	}
	// Output:
	// add: 5 (error: false)
	// sub: Tool "sub" not found. Available tools: add. (error: true)
}
