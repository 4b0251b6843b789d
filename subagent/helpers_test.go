package subagent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// env is a Runner, a Manager and a JSONL store in a temporary directory.
type env struct {
	t     *testing.T
	dir   string
	store *session.JSONLStore
	r     *runner.Runner
	m     *Manager

	mu         sync.Mutex
	childEvs   []childEvent
	followEvs  []runner.Event
	parentEvs  []runner.Event
	extraTools []tool.Tool
}

type childEvent struct {
	task Task
	ev   runner.Event
}

// newEnv builds an env whose children run on child; mod adjusts the
// Manager's Config, caps the Runner's lane caps.
func newEnv(t *testing.T, parent, child llm.Model, caps map[string]int, mod func(*Config), extra ...tool.Tool) *env {
	t.Helper()
	return newEnvRunner(t, parent, child, runner.Config{LaneCaps: caps}, mod, extra...)
}

// newEnvRunner is newEnv with the Runner's Config (its Store is the env's).
func newEnvRunner(t *testing.T, parent, child llm.Model, rc runner.Config, mod func(*Config), extra ...tool.Tool) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), extraTools: extra}
	e.store = session.NewJSONLStore(e.dir)
	rc.Store = e.store
	r, err := runner.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	e.r = r
	childReg, _ := tool.NewRegistry(extra...)
	cfg := Config{Runner: r, Store: e.store, Cwd: e.dir,
		Child: runner.Request{Model: child, Info: child.(interface{ ModelInfo() llm.ModelInfo }).ModelInfo(), Tools: childReg, Timeout: 30 * time.Second},
		OnChildEvent: func(task Task, ev runner.Event) {
			e.mu.Lock()
			e.childEvs = append(e.childEvs, childEvent{task, ev})
			e.mu.Unlock()
		},
		OnFollowUp: func(ev runner.Event) {
			e.mu.Lock()
			e.followEvs = append(e.followEvs, ev)
			e.mu.Unlock()
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	if parent != nil {
		m.cfg.Parent = e.request(parent, "", runner.SessionSpec{})
		m.cfg.Parent.OnEvent = nil
	}
	t.Cleanup(func() {
		m.Close()
		r.Close()
	})
	return e
}

// request is a top-level run on model with the agent tools.
func (e *env) request(model llm.Model, prompt string, sess runner.SessionSpec) runner.Request {
	reg, err := tool.NewRegistry(append(e.m.Tools(), e.extraTools...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	sess.Cwd = e.dir
	return runner.Request{Prompt: prompt, Model: model, Info: model.(interface{ ModelInfo() llm.ModelInfo }).ModelInfo(), Tools: reg,
		Session: sess, Timeout: 30 * time.Second,
		OnEvent: func(ev runner.Event) {
			if ev.Type == runner.EventSubagentStart || ev.Type == runner.EventSubagentEnd || ev.Type == runner.EventRunEnd {
				e.mu.Lock()
				e.parentEvs = append(e.parentEvs, ev)
				e.mu.Unlock()
			}
		}}
}

func (e *env) run(model llm.Model, prompt string, sess runner.SessionSpec) runner.Result {
	e.t.Helper()
	res, err := e.r.Run(context.Background(), e.request(model, prompt, sess))
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) childEvents(typ string) []childEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []childEvent
	for _, c := range e.childEvs {
		if string(c.ev.Type) == typ {
			out = append(out, c)
		}
	}
	return out
}

func (e *env) parentEvents(typ string) []runner.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []runner.Event
	for _, ev := range e.parentEvs {
		if string(ev.Type) == typ {
			out = append(out, ev)
		}
	}
	return out
}

// load reads a session's transcript.
func (e *env) load(id string) *session.Transcript {
	e.t.Helper()
	tr, err := e.store.Load(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return tr
}

// countCustom counts a transcript's custom entries of a type.
func countCustom(tr *session.Transcript, typ string) int {
	n := 0
	for _, en := range tr.Entries {
		if en.Type == session.EntryCustom && en.CustomType == typ {
			n++
		}
	}
	return n
}

// countNotifications counts the user messages that deliver task id.
func countNotifications(tr *session.Transcript, id string) int {
	n := 0
	for _, en := range tr.Entries {
		if en.Type == session.EntryMessage && en.Message.Role == llm.RoleUser && strings.Contains(en.Message.Text(), notificationMarker(id)) {
			n++
		}
	}
	return n
}

// messages are a transcript's messages in file order.
func messages(tr *session.Transcript) []llm.Message {
	var out []llm.Message
	for _, en := range tr.Entries {
		if en.Type == session.EntryMessage {
			out = append(out, *en.Message)
		}
	}
	return out
}

// checkPairing fails unless every tool call of msgs has exactly one
// result before the next assistant message.
func checkPairing(t *testing.T, msgs []llm.Message) {
	t.Helper()
	open := map[string]int{}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			for id, n := range open {
				if n != 1 {
					t.Fatalf("message %d: call %s has %d results before the next assistant message", i, id, n)
				}
			}
			open = map[string]int{}
			for _, c := range m.Content {
				if c.Type == llm.ContentToolCall {
					open[c.ID] = 0
				}
			}
		case llm.RoleToolResult:
			open[m.ToolCallID]++
		}
	}
	for id, n := range open {
		if n != 1 {
			t.Fatalf("call %s has %d results at the end", id, n)
		}
	}
}

// taskIDOf reads the taskId of a background agent result.
func taskIDOf(t *testing.T, msgs []llm.Message) []string {
	t.Helper()
	var ids []string
	for _, m := range msgs {
		if m.Role == llm.RoleToolResult && m.ToolName == ToolAgent {
			var v struct {
				TaskID string `json:"taskId"`
			}
			if json.Unmarshal(m.Details, &v) == nil && v.TaskID != "" || json.Unmarshal([]byte(m.Text()), &v) == nil && v.TaskID != "" {
				ids = append(ids, v.TaskID)
			}
		}
	}
	return ids
}

// toolResults counts the tool results of a request.
func toolResults(req *llm.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleToolResult {
			n++
		}
	}
	return n
}

func lastUserText(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Text()
		}
	}
	return ""
}

// script is a faux model that answers each request with f's step.
func script(f func(req *llm.Request) faux.Step) *faux.Model {
	m := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step { return f(req) }))
	m.Repeat = true
	return m
}

func agentArgs(desc, prompt string, background bool) map[string]any {
	return map[string]any{"description": desc, "prompt": prompt, "background": background}
}
