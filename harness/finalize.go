package harness

import (
	"context"
	"errors"

	"github.com/agentloop/agentloop/llm"
)

// IncompleteTurnMessage is what a user reads when a native turn settled
// without an answer and the finalization call could not produce one.
const IncompleteTurnMessage = "The agent's tools finished but it ended the turn without a reply, and asking for the final answer failed; " +
	"the tools' effects are in the transcript. Ask again to continue."

// finalizePrompt asks for the answer the settled turn owes.
const finalizePrompt = "The tools above have finished. Without calling any tool, give the final answer to the user's request from their results."

// Settled reports whether msgs, an attempt's messages, end a turn whose
// tools all finished without assistant text after the last result.
func Settled(msgs []llm.Message) bool {
	open := map[string]bool{}
	lastResult, sawCall := -1, false
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleAssistant:
			for _, c := range m.ToolCalls() {
				open[c.ID], sawCall = true, true
			}
		case llm.RoleToolResult:
			delete(open, m.ToolCallID)
			lastResult = i
		}
	}
	if !sawCall || len(open) > 0 || lastResult < 0 {
		return false
	}
	for _, m := range msgs[lastResult+1:] {
		if m.Role == llm.RoleAssistant && m.Text() != "" {
			return false
		}
	}
	return true
}

// FinalizeSettledTurn makes the one isolated call that answers a settled
// turn: no tools, no hooks, no user input, on a frozen copy of the
// transcript at the settled boundary. The caller runs it once, outside
// retries and fallback.
func FinalizeSettledTurn(ctx context.Context, m llm.Model, system string, transcript []llm.Message, opts llm.Options) (llm.Message, error) {
	if m == nil {
		return llm.Message{}, errors.New("no model to finalize the turn with")
	}
	frozen := make([]llm.Message, 0, len(transcript)+1)
	for i := range transcript {
		frozen = append(frozen, transcript[i].Clone())
	}
	frozen = append(frozen, llm.UserText(finalizePrompt))
	opts.ToolChoice = "none"
	req := &llm.Request{SystemPrompt: system, Messages: frozen, Options: opts}
	var final *llm.Message
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return llm.Message{}, err
		}
		switch ev.Type {
		case llm.EventDone:
			final = ev.Message
		case llm.EventError:
			if ev.Err != nil {
				return llm.Message{}, ev.Err
			}
			return llm.Message{}, errors.New("the finalization call failed")
		}
	}
	if final == nil {
		return llm.Message{}, errors.New("the finalization call ended without a message")
	}
	msg := final.Clone()
	// Tool calls in the answer would be side effects nobody runs.
	kept := msg.Content[:0]
	for _, c := range msg.Content {
		if c.Type != llm.ContentToolCall {
			kept = append(kept, c)
		}
	}
	msg.Content = kept
	if msg.Text() == "" {
		return msg, errors.New("the finalization call produced no text")
	}
	return msg, nil
}
