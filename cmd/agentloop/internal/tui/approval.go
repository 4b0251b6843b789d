package tui

import (
	"context"
	"fmt"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"

	"github.com/agentloop/agentloop/tool"
)

// ApprovalMsg is a call waiting for the person's answer: the model shows
// it in the live region until it is answered.
type ApprovalMsg struct {
	ID     int64
	Call   tool.Call
	Reason string
	// Task is the subagent task the call comes from ("" for the chat's
	// own run): "t_… (general)", from tool.OriginOf.
	Task  string
	reply chan approvalReply
}

// approvalGoneMsg withdraws a question whose run went away (aborted,
// timed out) before it was answered.
type approvalGoneMsg struct{ id int64 }

type approvalReply struct {
	answer tool.Answer
	text   string // a deny with words for the model
}

// UserDenial is the refusal of a call with the words the person typed; the
// approval turns its text into the reason the model reads.
type UserDenial struct{ Text string }

func (e UserDenial) Error() string { return fmt.Sprintf("the user refused it and said: %q", e.Text) }

// Approver turns the asks of tool.Approval into pending approvals of the
// chat. Send delivers messages to the program (tea.Program.Send).
type Approver struct {
	Send func(tea.Msg)
	next atomic.Int64
}

// Ask is a tool.Asker: it shows the call in the chat and waits for y, a, n
// or a line of text (a deny with that text), or for ctx to end.
func (a *Approver) Ask(ctx context.Context, call tool.Call, reason string) (tool.Answer, error) {
	m := ApprovalMsg{ID: a.next.Add(1), Call: call, Reason: reason, reply: make(chan approvalReply, 1)}
	if o, ok := tool.OriginOf(ctx); ok {
		m.Task = o.TaskID + " (" + o.Agent + ")"
	}
	a.Send(m)
	select {
	case r := <-m.reply:
		if r.text != "" {
			return tool.AnswerNo, UserDenial{Text: r.text}
		}
		return r.answer, nil
	case <-ctx.Done():
		a.Send(approvalGoneMsg{id: m.ID})
		return tool.AnswerNo, ctx.Err()
	}
}
