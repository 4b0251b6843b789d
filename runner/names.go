package runner

import (
	"context"
	"iter"
	"sync"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// The provider sees wire-safe tool names (tool.NameMap); the agent, the
// registry, hooks and the transcript see the tools' own names. Two places
// translate: wireMessages (in TransformContext, before the history repair,
// whose sanitiser drops calls with names a provider would refuse) maps the
// history to wire names, and namedModel maps the offered tool specs to wire
// names and the streamed tool calls back. Runs whose names are all safe skip
// both, until a tool whose name is not joins them (wireNames).

// wireNames is a run's name map: nil while every tool name is wire-safe,
// and made again when tools join the run (an MCP server's list_changed),
// so a new tool's name is mapped like the first ones'.
type wireNames struct {
	mu sync.Mutex
	m  *tool.NameMap
}

// set makes the map of names.
func (w *wireNames) set(names []string) {
	nm := tool.NewNameMap(names)
	if nm.Identity() {
		nm = nil
	}
	w.mu.Lock()
	w.m = nm
	w.mu.Unlock()
}

// get is the map now, nil when no name needs mapping.
func (w *wireNames) get() *tool.NameMap {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m
}

// wireMessages returns msgs with tool names mapped to wire names.
func wireMessages(m *tool.NameMap, msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for i := range msgs {
		w := m.WireMessage(msgs[i])
		if out == nil && !sameNames(&w, &msgs[i]) {
			out = make([]llm.Message, len(msgs))
			copy(out, msgs[:i])
		}
		if out != nil {
			out[i] = w
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

func sameNames(a, b *llm.Message) bool {
	if a.ToolName != b.ToolName || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if a.Content[i].Name != b.Content[i].Name {
			return false
		}
	}
	return true
}

// namedModel offers tools under wire names and restores the original names
// in what the model streams back.
type namedModel struct {
	llm.Model
	names *wireNames
}

func (n *namedModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	nm := n.names.get()
	if nm == nil {
		return n.Model.Stream(ctx, req)
	}
	r := *req
	r.Tools = nm.Specs(req.Tools)
	return func(yield func(llm.Event, error) bool) {
		for ev, err := range n.Model.Stream(ctx, &r) {
			if err == nil {
				restoreNames(nm, &ev)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// restoreNames maps tool-call names in an event back to the tools' own names.
// The partial message belongs to the stream being consumed, so renaming its
// block in place is what the consumer would see anyway.
func restoreNames(names *tool.NameMap, ev *llm.Event) {
	fix := func(m *llm.Message) {
		if m == nil {
			return
		}
		for i := range m.Content {
			if m.Content[i].Type == llm.ContentToolCall {
				m.Content[i].Name, _ = names.Original(m.Content[i].Name)
			}
		}
	}
	fix(ev.Partial)
	fix(ev.Message)
	if ev.Block != nil && ev.Block.Type == llm.ContentToolCall {
		ev.Block.Name, _ = names.Original(ev.Block.Name)
	}
}
