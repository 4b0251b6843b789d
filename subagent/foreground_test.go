package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// A foreground call blocks and returns the child's final text; the child
// is a session whose header names its parent, on the subagent lane,
// without the agent tools at depth 1.
func TestForegroundChildReturnsItsAnswer(t *testing.T) {
	child := script(func(req *llm.Request) faux.Step { return faux.Say("the answer is 42") })
	parent := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			return faux.Call("", ToolAgent, agentArgs("find the answer", "What is the answer?", false))
		}
		return faux.Say("the child said: " + req.Messages[len(req.Messages)-1].Text())
	})
	e := newEnv(t, parent, child, nil, nil)
	res := e.run(parent, "go", runner.SessionSpec{})
	if !res.OK() {
		t.Fatalf("parent run: %s %v", res.Reason, res.Err)
	}
	final := res.Messages[len(res.Messages)-1].Text()
	if !strings.Contains(final, "the answer is 42") || !strings.Contains(final, "completed") {
		t.Fatalf("parent's answer %q lacks the child's", final)
	}
	var d details
	for _, m := range res.Messages {
		if m.Role == llm.RoleToolResult {
			if m.IsError {
				t.Fatalf("agent result is an error: %s", m.Text())
			}
			if err := json.Unmarshal(m.Details, &d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d.Status != StatusCompleted || d.Turns != 1 || d.ChildSessionID == "" || !strings.HasPrefix(d.TaskID, "t_") {
		t.Fatalf("details %+v", d)
	}
	ctr := e.load(d.ChildSessionID)
	h := ctr.Header
	if h.ParentSessionID != res.SessionID || h.TaskID != d.TaskID || h.Depth != 1 || h.Agent != GeneralAgent || h.ParentToolCallID == "" {
		t.Fatalf("child header %+v", h)
	}
	starts := e.childEvents(string(runner.EventRunStart))
	if len(starts) != 1 || starts[0].ev.Start.Lane != runner.LaneSubagent {
		t.Fatalf("child run_start %+v", starts)
	}
	for _, name := range starts[0].ev.Start.Tools {
		if isAgentTool(name) {
			t.Fatalf("a child at the maximum depth is offered %s", name)
		}
	}
	ptr := e.load(res.SessionID)
	if countCustom(ptr, SpawnedType) != 1 || countCustom(ptr, ResultType) != 1 {
		t.Fatalf("parent has %d spawn and %d result entries", countCustom(ptr, SpawnedType), countCustom(ptr, ResultType))
	}
	if s, e2 := e.parentEvents("subagent_start"), e.parentEvents("subagent_end"); len(s) != 1 || len(e2) != 1 || e2[0].Subagent.Status != StatusCompleted {
		t.Fatalf("parent stream: %d subagent_start, %d subagent_end", len(s), len(e2))
	}
	// The events are protocol v2 lines.
	b, err := json.Marshal(e.parentEvents("subagent_end")[0])
	if err != nil || !strings.Contains(string(b), `"type":"subagent_end"`) || !strings.Contains(string(b), `"status":"completed"`) {
		t.Fatalf("subagent_end line %s (%v)", b, err)
	}
	checkPairing(t, messages(ptr))
}

// Nine agent calls of one message run in parallel on a subagent lane
// capped at 8: eight run at once, the ninth waits its turn (one lane_wait)
// and every one completes.
func TestNineParallelChildrenOnCapEight(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int32
	child := script(func(req *llm.Request) faux.Step {
		if arrived.Add(1) == 8 {
			close(release) // eight streams are open at once
		}
		return faux.Say("done: " + lastUserText(req)).WithHold(release)
	})
	parent := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			var calls []llm.Content
			for i := range 9 {
				calls = append(calls, faux.ToolCall(ToolAgent, agentArgs(fmt.Sprintf("job %d", i), fmt.Sprintf("job %d", i), false)))
			}
			return faux.Reply(calls...)
		}
		return faux.Say("all done")
	})
	e := newEnv(t, parent, child, map[string]int{runner.LaneMain: 4, runner.LaneSubagent: 8}, func(c *Config) { c.MaxLivePerSession = 9 })
	res := e.run(parent, "go", runner.SessionSpec{})
	if !res.OK() {
		t.Fatalf("parent: %s %v", res.Reason, res.Err)
	}
	if n := len(e.childEvents(string(runner.EventLaneWait))); n != 1 {
		t.Fatalf("%d lane_wait events among the children, want 1", n)
	}
	done := 0
	for _, m := range res.Messages {
		if m.Role == llm.RoleToolResult && !m.IsError && strings.Contains(m.Text(), "done: job") {
			done++
		}
	}
	if done != 9 {
		t.Fatalf("%d of 9 children completed", done)
	}
}

// A session at the maximum depth refuses agent (a restored child cannot
// regain the depth it lost), and the sixth live child of a session, or
// one over the tree's cap, is refused with a text the model reads.
func TestDepthAndCapRefusals(t *testing.T) {
	t.Run("depth", func(t *testing.T) {
		parent := script(func(req *llm.Request) faux.Step {
			if toolResults(req) == 0 {
				return faux.Call("", ToolAgent, agentArgs("nested", "do it", false))
			}
			return faux.Say("ok")
		})
		e := newEnv(t, parent, parent, nil, nil)
		// A session whose header says depth 1 (a child), run directly with
		// the agent tool.
		sess, err := e.store.Create(context.Background(), session.CreateOptions{Cwd: e.dir,
			Subagent: &session.Subagent{ParentSessionID: "p", TaskID: "t_x", Depth: 1, Agent: GeneralAgent}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Append(context.Background(), session.MessageEntry(llm.UserText("earlier"))); err != nil {
			t.Fatal(err)
		}
		id := sess.ID()
		sess.Close()
		res := e.run(parent, "go", runner.SessionSpec{ID: id})
		got := refusal(res)
		if got != "agent is not allowed at depth 1 (max 1)" {
			t.Fatalf("refusal %q", got)
		}
	})
	t.Run("per session", func(t *testing.T) {
		hold := make(chan struct{})
		child := script(func(req *llm.Request) faux.Step { return faux.Say("late").WithHold(hold) })
		parent := script(func(req *llm.Request) faux.Step {
			if toolResults(req) == 0 {
				var calls []llm.Content
				for i := range 6 {
					calls = append(calls, faux.ToolCall(ToolAgent, agentArgs(fmt.Sprintf("bg %d", i), "wait", true)))
				}
				return faux.Reply(calls...)
			}
			return faux.Say("ok")
		})
		e := newEnv(t, parent, child, nil, nil)
		res := e.run(parent, "go", runner.SessionSpec{})
		got := refusal(res)
		close(hold)
		if got != "this session already has 5 running agents (max 5); wait for one to finish" {
			t.Fatalf("refusal %q", got)
		}
		if n := len(taskIDOf(t, res.Messages)); n != 5 {
			t.Fatalf("%d accepted, want 5", n)
		}
		e.m.Wait()
	})
	t.Run("per root", func(t *testing.T) {
		hold := make(chan struct{})
		child := script(func(req *llm.Request) faux.Step { return faux.Say("late").WithHold(hold) })
		parent := script(func(req *llm.Request) faux.Step {
			if toolResults(req) == 0 {
				return faux.Reply(faux.ToolCall(ToolAgent, agentArgs("a", "wait", true)), faux.ToolCall(ToolAgent, agentArgs("b", "wait", true)))
			}
			return faux.Say("ok")
		})
		e := newEnv(t, parent, child, nil, func(c *Config) { c.MaxLivePerRoot = 1 })
		res := e.run(parent, "go", runner.SessionSpec{})
		got := refusal(res)
		close(hold)
		if got != "this session's tree already has 1 running agents (max 1); wait for one to finish" {
			t.Fatalf("refusal %q", got)
		}
		e.m.Wait()
	})
}

// refusal is the text of the run's first failed agent result.
func refusal(res runner.Result) string {
	for _, m := range res.Messages {
		if m.Role == llm.RoleToolResult && m.IsError {
			return m.Text()
		}
	}
	return ""
}

// context fork starts the child from a copy of the parent's session: it
// sees the parent's conversation so far, and its header still names its
// parent and depth.
func TestForkContextSeesTheParentsConversation(t *testing.T) {
	var sawParentPrompt atomic.Bool
	child := script(func(req *llm.Request) faux.Step {
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser && m.Text() == "the secret word is plum" {
				sawParentPrompt.Store(true)
			}
		}
		return faux.Say("forked answer")
	})
	parent := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			args := agentArgs("recall", "what was the secret word?", false)
			args["context"] = "fork"
			return faux.Call("", ToolAgent, args)
		}
		return faux.Say("ok")
	})
	e := newEnv(t, parent, child, nil, nil)
	res := e.run(parent, "the secret word is plum", runner.SessionSpec{})
	if !res.OK() || !sawParentPrompt.Load() {
		t.Fatalf("parent %s; the child saw the parent's prompt: %v", res.Reason, sawParentPrompt.Load())
	}
	var d details
	for _, m := range res.Messages {
		if m.Role == llm.RoleToolResult {
			_ = json.Unmarshal(m.Details, &d)
		}
	}
	h := e.load(d.ChildSessionID).Header
	if d.Status != StatusCompleted || h.TaskID != d.TaskID || h.Depth != 1 || h.ParentSession == "" {
		t.Fatalf("details %+v, header %+v", d, h)
	}
}
