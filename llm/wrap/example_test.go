package wrap_test

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/wrap"
)

// A local model writes its call as text in the Hermes format; the wrapped
// model yields a real call, matched to the offered tool's name.
func ExampleWrap() {
	base := scripted{blocks: []blk{text(`Checking.<tool_call>{"name": "Functions.Read", "arguments": {"path": "go.mod"}}</tool_call>`)}}
	m := wrap.Wrap(base, wrap.For("ollama", llm.APIOpenAICompletions))
	for ev, err := range m.Stream(context.Background(), toolsRequest()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Type == llm.EventDone {
			for _, c := range ev.Message.Content {
				if c.Type == llm.ContentToolCall {
					fmt.Println("call", c.Name, string(c.Arguments))
				} else {
					fmt.Println(c.Type, c.Text)
				}
			}
			fmt.Println(ev.Reason)
		}
	}
	// Output:
	// text Checking.
	// call read {"path": "go.mod"}
	// toolUse
}
