package faux_test

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// A two-step script: the first call asks for a tool, the second answers.
func Example() {
	m := faux.New(
		faux.Call("Looking.", "ls", map[string]string{"path": "."}),
		faux.Say("Nothing much here."),
	)
	for range 2 {
		for ev, err := range m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}) {
			if err != nil {
				fmt.Println(err)
				return
			}
			if ev.Type == llm.EventDone {
				fmt.Printf("%s: %q %d tool call(s)\n", ev.Reason, ev.Message.Text(), len(ev.Message.ToolCalls()))
			}
		}
	}
	fmt.Println("calls:", m.Calls())
	// Output:
	// toolUse: "Looking." 1 tool call(s)
	// stop: "Nothing much here." 0 tool call(s)
	// calls: 2
}
