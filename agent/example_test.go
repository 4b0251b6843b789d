package agent_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// An agent with one custom tool, run on the scripted model: the model
// calls the tool, reads its result and answers.
func Example() {
	greet := &tool.Func{
		ToolName:        "greet",
		ToolDescription: "Greets someone by name.",
		Parameters:      []byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		Run: func(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			return tool.TextResult("hello from the tool to " + string(call.Args)), nil
		},
	}
	tools, _ := tool.NewRegistry(greet)
	model := faux.New(
		faux.Call("Let me greet them.", "greet", map[string]string{"name": "Ada"}),
		faux.Say("Done: I greeted Ada."),
	)
	a := agent.New(agent.Config{Model: model, Tools: tools})
	for ev, err := range a.Run(context.Background(), llm.UserText("greet Ada")) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case agent.EventToolExecutionEnd:
			fmt.Printf("tool %s: %s\n", ev.ToolName, ev.Result.Text())
		case agent.EventMessageEnd:
			if ev.Message.Role == llm.RoleAssistant {
				fmt.Println("assistant:", ev.Message.Text())
			}
		case agent.EventAgentEnd:
			fmt.Println("end:", ev.Reason, ev.StopReason)
		}
	}
	// Output:
	// assistant: Let me greet them.
	// tool greet: hello from the tool to {"name":"Ada"}
	// assistant: Done: I greeted Ada.
	// end: stop stop
}

// Events encode to the JSON lines of docs/protocol.md; a Subscribe handler
// sees every event of every run, in the same order as the iterator.
func ExampleAgent_Subscribe() {
	model := faux.New(faux.Say("Hi!"))
	model.Now = func() int64 { return 1 }
	a := agent.New(agent.Config{Model: model, Now: func() int64 { return 1 }})
	a.Subscribe(func(ev agent.Event) {
		switch {
		case ev.Type == agent.EventMessageUpdate:
		case ev.Message != nil && ev.Type != agent.EventTurnEnd:
			fmt.Println(strings.TrimSpace(fmt.Sprint(ev.Type, " ", ev.Turn, " ", ev.Message.Role, " ", ev.Message.Text())))
		default:
			fmt.Println(strings.TrimSpace(fmt.Sprint(ev.Type, " ", ev.Turn, " ", ev.StopReason)))
		}
	})
	for range a.Run(context.Background(), llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hello")}, Timestamp: 1}) {
	}
	// Output:
	// agent_start 0
	// turn_start 1
	// message_start 1 user hello
	// message_end 1 user hello
	// message_start 1 assistant
	// message_end 1 assistant Hi!
	// turn_end 1 stop
	// agent_end 0 stop
}
