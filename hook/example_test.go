package hook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/tool"
)

// A Go program guards tool calls with two hooks: the higher-priority one
// rewrites arguments, the other refuses recursive deletes. The seams bind
// the bus to the agent loop.
func ExampleBus() {
	bus := hook.New(&hook.Options{Report: func(_ context.Context, n hook.Notice) { fmt.Println("notice:", n.Text) }})

	bus.OnBeforeToolCall(hook.Spec{Name: "quiet-ls", Priority: 10},
		func(_ context.Context, in hook.BeforeToolCallInput) (hook.BeforeToolCallOutput, error) {
			if string(in.Call.Args) == `{"command":"ls"}` {
				return hook.BeforeToolCallOutput{Args: json.RawMessage(`{"command":"ls -1"}`)}, nil
			}
			return hook.BeforeToolCallOutput{}, nil
		})
	bus.OnBeforeToolCall(hook.Spec{Name: "no-rm-rf"},
		func(_ context.Context, in hook.BeforeToolCallInput) (hook.BeforeToolCallOutput, error) {
			var args struct{ Command string }
			_ = json.Unmarshal(in.Call.Args, &args)
			if strings.Contains(args.Command, "rm -rf") {
				return hook.BeforeToolCallOutput{Block: true, Reason: "rm -rf is not allowed; delete files one by one."}, nil
			}
			return hook.BeforeToolCallOutput{}, nil
		})

	seams := bus.Seams(hook.SeamsOptions{}) // one per run; agent.Hooks has the same fields
	for _, cmd := range []string{"ls", "rm -rf /"} {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		call, blocked := seams.BeforeToolCall(context.Background(), tool.Call{ID: "1", Name: "bash", Args: args})
		if blocked != nil {
			fmt.Println("blocked:", blocked.Text())
			continue
		}
		fmt.Println("run:", string(call.Args))
	}
	// Output:
	// run: {"command":"ls -1"}
	// blocked: rm -rf is not allowed; delete files one by one.
}

// Load reads the user's and the workspace's settings, in Claude Code's
// format, and returns a bus with their command hooks.
func ExampleLoad() {
	bus, warnings, err := hook.Load(hook.LoadOptions{Workspace: ".", NoHooks: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(warnings), bus.Len(hook.BeforeToolCall))
	// Output: 0 0
}
