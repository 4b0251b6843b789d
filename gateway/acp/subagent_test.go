package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/gateway/acp"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/subagent"
)

// Issue 24 in an editor: the model of an ACP session starts a child whose
// bash call needs permission. The editor's request is a tool_call of its
// own (its id prefixed with the task, so it cannot be taken for the
// parent's call of the same id), titled with the task; the card is closed
// once answered; the child's call runs and the parent answers. The
// session's Manager is stopped by Config.Release before its Runner
// closes.
func TestSubagentPermissionNamesTheTask(t *testing.T) {
	m := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
		results, child := scriptState(req)
		switch {
		case child && results == 0:
			return faux.Call("", "bash", map[string]any{"command": "touch made-by-child"})
		case child:
			return faux.Say("child made it")
		case results == 0:
			return faux.Call("", subagent.ToolAgent, map[string]any{"description": "make a file", "prompt": "touch made-by-child"})
		}
		return faux.Say("parent done")
	}))
	m.Repeat = true
	cl := &client{asked: make(chan sdk.RequestPermissionRequest, 4)}
	e := serve(t, m, nil, cl)
	ag := withAgents(t, e)
	released := 0
	e.release = func(acp.Session, *runner.Runner) {
		ag.mu.Lock()
		defer ag.mu.Unlock()
		if ag.m != nil {
			ag.m.Close()
			released++
		}
	}
	e.initialize()
	sid := e.newSession()
	if r := e.prompt(sid, "make it"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}
	var child *sdk.RequestPermissionRequest
	for range 2 {
		req := <-cl.asked
		if strings.Contains(string(req.ToolCall.ToolCallId), "/") {
			child = &req
		}
	}
	if child == nil {
		t.Fatalf("no permission request of the child")
	}
	id := string(child.ToolCall.ToolCallId)
	task, call, _ := strings.Cut(id, "/")
	if !strings.HasPrefix(task, "t_") || call == "" || child.ToolCall.Title == nil ||
		!strings.Contains(*child.ToolCall.Title, "subagent task "+task) || !strings.Contains(*child.ToolCall.Title, "general") {
		t.Fatalf("the child's permission request: id %s, title %v", id, child.ToolCall.Title)
	}
	steps := e.wire.steps()
	if index(steps, "tool_call "+id+" pending") < 0 || index(steps, "tool_call "+id+" pending") > index(steps, "permission "+id) ||
		index(steps, "tool_call_update "+id+" completed") < index(steps, "permission "+id) {
		t.Fatalf("steps:\n%s", strings.Join(steps, "\n"))
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "made-by-child")); err != nil {
		t.Fatal("the child's allowed call did not run:", err)
	}
	var text strings.Builder
	cl.mu.Lock()
	for _, n := range cl.updates {
		if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
			text.WriteString(c.Content.Text.Text)
		}
	}
	cl.mu.Unlock()
	if !strings.Contains(text.String(), "parent done") || strings.Contains(text.String(), "child made it") {
		t.Fatalf("the editor was shown %q: want the parent's answer only", text.String())
	}
	if _, err := e.conn.CloseSession(t.Context(), sdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if released != 1 {
		t.Fatalf("Release ran %d times at session close", released)
	}
}

// A background child that asks for permission after the prompt that
// started it has ended is refused at once (nobody can answer it there),
// rather than waiting until it is stopped; the child reads the refusal and
// finishes.
func TestBackgroundChildAskAfterPromptIsRefused(t *testing.T) {
	hold := make(chan struct{})
	m := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
		results, child := scriptState(req)
		switch {
		case child && results == 0:
			return faux.Call("", "bash", map[string]any{"command": "touch late"}).WithHold(hold)
		case child:
			return faux.Say("child gave up")
		case results == 0:
			return faux.Call("", subagent.ToolAgent, map[string]any{"description": "later", "prompt": "touch late", "background": true})
		}
		return faux.Say("started it")
	}))
	m.Repeat = true
	cl := &client{asked: make(chan sdk.RequestPermissionRequest, 4)}
	e := serve(t, m, nil, cl)
	ag := withAgents(t, e)
	t.Cleanup(func() {
		if m := ag.manager(); m != nil {
			m.Close()
		}
	})
	e.initialize()
	sid := e.newSession()
	if r := e.prompt(sid, "start it"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}
	<-cl.asked // the parent's own agent call
	close(hold)
	done := make(chan struct{})
	go func() { ag.manager().Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the background child still waits for a permission nobody can give")
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "late")); err == nil {
		t.Fatal("the refused call ran")
	}
	select {
	case req := <-cl.asked:
		t.Fatalf("the editor was asked after the prompt ended: %+v", req.ToolCall)
	default:
	}
}

// agents is the subagent Manager of an env's session, made at its first
// prompt on the Runner Open gave it (as agentloop acp makes one).
type agents struct {
	mu sync.Mutex
	m  *subagent.Manager
}

func (a *agents) manager() *subagent.Manager {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m
}

// withAgents gives every run of e the agent tools.
func withAgents(t *testing.T, e *env) *agents {
	a := &agents{}
	e.adjust = func(q *runner.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.m == nil {
			e.mu.Lock()
			rn := e.runners[len(e.runners)-1]
			e.mu.Unlock()
			child := *q
			child.Approval = nil
			var err error
			if a.m, err = subagent.New(subagent.Config{Runner: rn, Store: e.store, Cwd: e.cwd, Child: child}); err != nil {
				t.Error(err)
				return
			}
		}
		for _, tl := range a.m.Tools() {
			q.Tools.Add(tl)
		}
	}
	return a
}

// scriptState is what a scripted model of a parent and its child decides
// by: the tool results so far, and whether the request is the child's.
func scriptState(req *llm.Request) (results int, child bool) {
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleToolResult {
			results++
		}
	}
	return results, strings.Contains(req.SystemPrompt, "[Subagent Context]")
}
