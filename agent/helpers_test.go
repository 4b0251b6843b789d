package agent

import (
	"context"
	"encoding/json"
	"iter"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// fn builds a test tool.
func fn(name string, safe bool, run func(ctx context.Context, call tool.Call, update func(tool.Partial)) (tool.Result, error)) *tool.Func {
	return &tool.Func{ToolName: name, ToolDescription: "test tool " + name, Concurrent: safe, Run: run}
}

// textTool returns a tool answering text.
func textTool(name string, safe bool, text string) *tool.Func {
	return fn(name, safe, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult(text), nil
	})
}

func registry(t testing.TB, tools ...tool.Tool) *tool.Registry {
	t.Helper()
	r, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runAll runs the agent to the end and returns the events.
func runAll(t testing.TB, a *Agent, ctx context.Context, prompts ...llm.Message) []Event {
	t.Helper()
	var evs []Event
	for ev, err := range a.Run(ctx, prompts...) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != EventAgentEnd {
		t.Fatalf("run did not end with agent_end: %v", typesOf(evs))
	}
	return evs
}

func typesOf(evs []Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		s := string(e.Type)
		if e.Type == EventMessageStart || e.Type == EventMessageEnd {
			s += ":" + string(e.Message.Role)
		}
		if e.Type == EventToolExecutionStart || e.Type == EventToolExecutionEnd {
			s += ":" + e.ToolCallID
		}
		if e.Type == EventMessageUpdate {
			continue
		}
		out = append(out, s)
	}
	return out
}

func last(evs []Event) Event { return evs[len(evs)-1] }

// checkPairing fails unless every tool call of every assistant message is
// followed by exactly one result before the next assistant message.
func checkPairing(t *testing.T, msgs []llm.Message) {
	t.Helper()
	open := map[string]int{}
	flush := func(at int) {
		for id, n := range open {
			if n != 1 {
				t.Errorf("message %d: call %s has %d results, want 1", at, id, n)
			}
		}
		clear(open)
	}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			flush(i)
			for _, c := range m.ToolCalls() {
				open[c.ID] = 0
			}
		case llm.RoleToolResult:
			n, ok := open[m.ToolCallID]
			if !ok {
				t.Errorf("message %d: result for unknown call %s", i, m.ToolCallID)
			}
			open[m.ToolCallID] = n + 1
		}
	}
	flush(len(msgs))
}

// results returns the tool results of msgs by call id.
func results(msgs []llm.Message) map[string]*llm.Message {
	out := map[string]*llm.Message{}
	for i := range msgs {
		if m := &msgs[i]; m.Role == llm.RoleToolResult {
			out[m.ToolCallID] = m
		}
	}
	return out
}

func resultIDs(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == llm.RoleToolResult {
			out = append(out, m.ToolCallID)
		}
	}
	return out
}

func tc(id, name string, args any) llm.Content { return faux.ToolCallID(id, name, args) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func iterPull(seq func(func(Event, error) bool)) (func() (Event, error, bool), func()) {
	return iter.Pull2(seq)
}
