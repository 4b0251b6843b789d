package compact_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// A Compactor sits in the agent's TransformContext: before each model call
// it checks the prompt against the budget and, when it is over, replaces
// old history with a summary written by a (possibly cheaper) model.
func ExampleCompactor_TransformContext() {
	summariser := faux.New(faux.Say("## Goal\nPort the parser.\n\n## Next Steps\nRun the tests."))
	summariser.Repeat = true // long history is summarised in parts, then merged
	c, err := compact.New(compact.Config{
		Window:     32_000,
		Summarizer: &compact.Summarizer{Model: summariser},
		OnEvent: func(e compact.Event) {
			if e.Type == compact.EventCompactionEnd {
				fmt.Printf("compacted %d messages\n", e.Record.DroppedMessages)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := c.Budget()
	fmt.Printf("window %d: reserve %d, prompt budget %d, keep recent %d\n",
		b.Window, b.Reserve, b.PromptBudget(), b.KeepRecent)

	// Forty long turns: about 24,000 tokens, twice the prompt budget.
	var history []llm.Message
	for i := range 40 {
		history = append(history,
			llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(strings.Repeat("q", 1200))}, Timestamp: int64(2 * i)},
			llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("a", 1200))}, Timestamp: int64(2*i + 1)})
	}
	msgs, err := c.TransformContext(context.Background(), history)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(history), "messages became", len(msgs))
	fmt.Println(strings.HasPrefix(msgs[0].Text(), compact.SummaryPrefix))
	// Output:
	// window 32000: reserve 20000, prompt budget 12000, keep recent 8000
	// compacted 53 messages
	// 80 messages became 28
	// true
}

// The pure functions work on their own: estimate a prompt and ask the
// precheck which route to take.
func ExamplePrecheck() {
	msgs := []llm.Message{llm.UserText(strings.Repeat("x", 60_000))}
	d := compact.Precheck(compact.Prompt{System: "You are terse.", Messages: msgs}, compact.NewBudget(32_000, 0))
	fmt.Println(d.Route, d.Estimated.Tokens, d.PromptBudget)
	// Output: compact_only 18005 12000
}

// Snip keeps the head and the tail of a long history and leaves a note
// where it dropped the middle; cuts fall only where a user turn starts.
func ExampleSnip() {
	var history []llm.Message
	for i := range 10 {
		history = append(history,
			llm.UserText(fmt.Sprintf("question %d %s", i, strings.Repeat("q", 400))),
			llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("a", 400))}})
	}
	out, removed := compact.Snip(history, 0, 400)
	fmt.Println(len(history), "messages,", removed, "removed,", len(out), "left")
	fmt.Println(out[2].Content[0].Text)
	fmt.Println(out[2].Content[1].Text[:10])
	// Output:
	// 20 messages, 14 removed, 6 left
	// [agentloop] 14 earlier messages (about 1421 tokens) were removed here to fit the context window.
	// question 8
}
