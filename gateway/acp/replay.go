package acp

import (
	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// replay sends the conversation of a transcript, on its current path, as
// the updates a live run would have sent: the user's messages, the
// assistant's thinking and text, each tool call (pending, with its diffs)
// and its end (completed or failed, with its result). Compaction keeps
// every message in the file, so the editor sees the whole conversation.
func replay(send func(sdk.SessionUpdate), tr *session.Transcript, cwd string) {
	calls := map[string]*callState{}
	for _, e := range tr.Path(tr.Leaf) {
		if e.Type != session.EntryMessage || e.Message == nil {
			continue
		}
		m := e.Message
		switch m.Role {
		case llm.RoleUser:
			for _, b := range m.Content {
				switch b.Type {
				case llm.ContentText:
					send(sdk.UpdateUserMessageText(b.Text))
				case llm.ContentImage:
					send(sdk.UpdateUserMessage(sdk.ImageBlock(b.Data, b.MimeType)))
				}
			}
		case llm.RoleAssistant:
			for _, b := range m.Content {
				switch b.Type {
				case llm.ContentThinking:
					if b.Thinking != "" {
						send(sdk.UpdateAgentThoughtText(b.Thinking))
					}
				case llm.ContentText:
					send(sdk.UpdateAgentMessageText(b.Text))
				case llm.ContentToolCall:
					st := &callState{name: b.Name, args: parseArgs(b.Arguments)}
					calls[b.ID] = st
					send(toolCallUpdate(cwd, b.ID, b.Name, b.Arguments, st))
				}
			}
		case llm.RoleToolResult:
			st := calls[m.ToolCallID]
			if st == nil {
				st = &callState{name: m.ToolName}
				calls[m.ToolCallID] = st
				send(toolCallUpdate(cwd, m.ToolCallID, m.ToolName, nil, st))
			}
			send(callEnd(m.ToolCallID, m.Content, m.Details, m.IsError, st.diff))
		}
	}
}
