package session_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// A run creates a session, appends as it goes, ends each turn, and hands
// the repaired context to the model on the next call.
func Example() {
	dir, _ := os.MkdirTemp("", "sessions")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store := session.NewJSONLStore(dir)

	s, err := store.Create(ctx, session.CreateOptions{Cwd: "/home/me/project"})
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Append(ctx, session.ModelChangeEntry("anthropic", "claude-sonnet-4-5"))
	s.Append(ctx, session.MessageEntry(llm.UserText("list the files")))
	s.Append(ctx, session.MessageEntry(llm.Message{
		Role:       llm.RoleAssistant,
		Content:    []llm.Content{llm.ToolCall("call_1", "ls", []byte(`{"path":"."}`))},
		StopReason: llm.StopReasonToolUse,
	}))
	// The run was interrupted before the tool's result was written.
	s.EndTurn()
	s.Close()

	// Resuming: a second run takes the lock and rebuilds the context.
	s, err = store.Open(ctx, s.ID(), &session.LockOptions{Wait: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	c := s.Context()
	msgs := session.Repair(c.Messages, session.RepairOptions{API: llm.APIAnthropicMessages})
	fmt.Println("model:", c.Provider+"/"+c.ModelID)
	for _, m := range msgs {
		fmt.Printf("%s %q\n", m.Role, m.Text())
	}
	// Output:
	// model: anthropic/claude-sonnet-4-5
	// user "list the files"
	// assistant ""
	// toolResult "[agentloop] no result was recorded for this tool call (the run was interrupted); this error result was added when the history was repaired."
}
