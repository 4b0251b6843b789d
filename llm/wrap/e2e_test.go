package wrap_test

import (
	"context"
	"encoding/json"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
	"github.com/agentloop/agentloop/llm/wrap"
	"github.com/agentloop/agentloop/tool"
)

// turns is a model that plays one scripted reply per call.
type turns struct {
	replies []scripted
	n       atomic.Int32
}

func (m *turns) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	i := int(m.n.Add(1)) - 1
	return m.replies[min(i, len(m.replies)-1)].Stream(ctx, req)
}

// Through the agent loop: a call written as text is run, one with broken
// arguments is answered with an error and not run, and a call named with
// a provider prefix reaches its tool.
func TestAgentWithWrappedModel(t *testing.T) {
	var ran []string
	read := &tool.Func{
		ToolName: "read", ToolDescription: "Reads.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		Run: func(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			var a struct{ Path string }
			json.Unmarshal(call.Args, &a)
			ran = append(ran, a.Path)
			return tool.TextResult("contents of " + a.Path), nil
		},
	}
	reg, err := tool.NewRegistry(read)
	if err != nil {
		t.Fatal(err)
	}
	base := &turns{replies: []scripted{
		{blocks: []blk{text(`Reading.<tool_call>{"name": "Read", "arguments": {"path": "a.txt"}}</tool_call>`)}},
		{blocks: []blk{text(`<function=read>{"path": "b.txt",}</function>`)}},
		{blocks: []blk{call("c9", "default_api:read", `{'path': 'c.txt'}`)}},
		{blocks: []blk{text("All read.")}},
	}}
	m := wrap.Wrap(base, wrap.Config{Repair: true, Promote: true, Normalize: true})
	a := agent.New(agent.Config{Model: m, Tools: reg})
	var end agent.Event
	for ev, err := range a.Run(context.Background(), llm.UserText("read them")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventAgentEnd {
			end = ev
		}
	}
	if end.Reason != agent.ReasonStop || end.Err != nil {
		t.Fatalf("run ended %q: %v", end.Reason, end.Err)
	}
	if got := len(ran); got != 2 || ran[0] != "a.txt" || ran[1] != "c.txt" {
		t.Fatalf("tools ran on %v, want a.txt and c.txt", ran)
	}
	// The broken call was answered with an error result, paired by id.
	msgs := a.Messages()
	var broken llm.Content
	for _, msg := range msgs {
		for _, c := range msg.ToolCalls() {
			if jsonpartial.IsInvalid(c.Arguments) {
				broken = c
			}
		}
	}
	found := false
	for _, msg := range msgs {
		if msg.Role == llm.RoleToolResult && msg.ToolCallID == broken.ID && broken.ID != "" {
			found = msg.IsError
		}
	}
	if !found {
		t.Errorf("no error result for the call with broken arguments %+v", broken)
	}
	if last := msgs[len(msgs)-1]; last.Text() != "All read." {
		t.Errorf("last message %q", last.Text())
	}
}
