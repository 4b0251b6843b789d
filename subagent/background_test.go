package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitResultTool blocks until the calling run's session holds a
// subagent_result entry: the parent is busy when its child ends.
func waitResultTool() tool.Tool {
	return tool.New("wait_result", "wait", func(ctx context.Context, _ struct{}, _ func(tool.Partial)) (tool.Result, error) {
		sc := runner.ScopeOf(ctx)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if countCustom(sc.Transcript(), ResultType) > 0 {
				return tool.TextResult("a result was recorded"), nil
			}
			select {
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		return tool.Result{}, errors.New("no result")
	})
}

// blockTool blocks until its call is cancelled.
func blockTool() tool.Tool {
	return tool.New("block", "block", func(ctx context.Context, _ struct{}, _ func(tool.Partial)) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, context.Cause(ctx)
	})
}

func hasNotification(req *llm.Request) bool {
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser && strings.Contains(m.Text(), "<task-notification") {
			return true
		}
	}
	return false
}

// A background child that ends while its parent runs is delivered to that
// run at its next turn boundary (a steer): one result entry, one message,
// no follow-up run.
func TestBackgroundResultSteersBusyParent(t *testing.T) {
	child := script(func(req *llm.Request) faux.Step { return faux.Say("background finding") })
	sawNote := false
	parent := script(func(req *llm.Request) faux.Step {
		switch {
		case hasNotification(req):
			sawNote = true
			return faux.Say("read the result")
		case toolResults(req) == 0:
			return faux.Call("", ToolAgent, agentArgs("look around", "look", true))
		case toolResults(req) == 1:
			return faux.Call("", "wait_result", map[string]any{})
		}
		return faux.Say("no notification came")
	})
	e := newEnv(t, parent, child, nil, nil, waitResultTool())
	res := e.run(parent, "go", runner.SessionSpec{})
	e.m.Wait()
	if !res.OK() || !sawNote {
		t.Fatalf("parent %s, saw the notification: %v", res.Reason, sawNote)
	}
	ids := taskIDOf(t, res.Messages)
	tr := e.load(res.SessionID)
	if len(ids) != 1 || countCustom(tr, ResultType) != 1 || countNotifications(tr, ids[0]) != 1 {
		t.Fatalf("tasks %v, %d result entries, %d notifications", ids, countCustom(tr, ResultType), countNotifications(tr, ids[0]))
	}
	if len(e.followEvs) != 0 {
		t.Fatalf("a follow-up run started for a busy parent")
	}
	if ends := e.parentEvents("subagent_end"); len(ends) != 1 || !ends[0].Subagent.Background {
		t.Fatalf("subagent_end events %v", ends)
	}
	checkPairing(t, messages(tr))
}

// A background child that ends after its parent's run is delivered to the
// idle session with a follow-up run that reads it.
func TestBackgroundResultFollowsUpIdleParent(t *testing.T) {
	hold := make(chan struct{})
	child := script(func(req *llm.Request) faux.Step { return faux.Say("late finding").WithHold(hold) })
	parent := script(func(req *llm.Request) faux.Step {
		if hasNotification(req) {
			return faux.Say("noted: " + lastUserText(req))
		}
		if toolResults(req) == 0 {
			return faux.Call("", ToolAgent, agentArgs("look later", "look", true))
		}
		return faux.Say("started it")
	})
	e := newEnv(t, parent, child, nil, nil)
	res := e.run(parent, "go", runner.SessionSpec{})
	if !res.OK() {
		t.Fatal(res.Reason, res.Err)
	}
	close(hold)
	e.m.Wait()
	ids := taskIDOf(t, res.Messages)
	tr := e.load(res.SessionID)
	if len(ids) != 1 || countCustom(tr, ResultType) != 1 || countNotifications(tr, ids[0]) != 1 {
		t.Fatalf("tasks %v, %d result entries, %d notifications", ids, countCustom(tr, ResultType), countNotifications(tr, ids[0]))
	}
	msgs := messages(tr)
	last := msgs[len(msgs)-1]
	if last.Role != llm.RoleAssistant || !strings.Contains(last.Text(), "late finding") || !strings.Contains(last.Text(), `status="completed"`) {
		t.Fatalf("the follow-up run's answer is %q", last.Text())
	}
	// The task's end is on the stream that follows the parent's run,
	// before the follow-up run that reads it.
	if len(e.followEvs) == 0 || e.followEvs[0].Type != runner.EventSubagentEnd || e.followEvs[0].Subagent.TaskID != ids[0] ||
		e.followEvs[0].Subagent.Status != StatusCompleted || !e.followEvs[0].Subagent.Background || e.followEvs[0].SessionID != res.SessionID {
		t.Fatalf("the follow-up stream starts with %+v, want the task's subagent_end", e.followEvs[0])
	}
	runs := 0
	for _, ev := range e.followEvs {
		if ev.Type == runner.EventRunEnd {
			runs++
			if !ev.End.OK() {
				t.Fatalf("follow-up run: %s", ev.End.Reason)
			}
		}
	}
	if runs != 1 {
		t.Fatalf("%d follow-up runs, want 1", runs)
	}
	checkPairing(t, msgs)
}

// With Config.FollowUp, an idle top-level parent's delivery is handed to
// the face that owns its runs: once, with the subagent_end, the result and
// its notification already in the transcript, and no run of the Manager's.
func TestBackgroundResultHandedToFollowUp(t *testing.T) {
	hold := make(chan struct{})
	child := script(func(req *llm.Request) faux.Step { return faux.Say("late finding").WithHold(hold) })
	parent := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			return faux.Call("", ToolAgent, agentArgs("look later", "look", true))
		}
		return faux.Say("started it")
	})
	type handed struct {
		session string
		end     *runner.Event
		tr      *session.Transcript
	}
	var got []handed
	var e *env
	e = newEnv(t, parent, child, nil, func(c *Config) {
		c.FollowUp = func(id string, end *runner.Event) {
			tr, _ := e.store.Load(context.Background(), id)
			e.mu.Lock()
			got = append(got, handed{id, end, tr})
			e.mu.Unlock()
		}
	})
	res := e.run(parent, "go", runner.SessionSpec{})
	if !res.OK() {
		t.Fatal(res.Reason, res.Err)
	}
	close(hold)
	e.m.Wait()
	ids := taskIDOf(t, res.Messages)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(got) != 1 || got[0].session != res.SessionID || got[0].end == nil || got[0].end.Type != runner.EventSubagentEnd ||
		got[0].end.Subagent.TaskID != ids[0] || got[0].end.Subagent.Status != StatusCompleted {
		t.Fatalf("FollowUp calls %+v", got)
	}
	if countCustom(got[0].tr, ResultType) != 1 || countNotifications(got[0].tr, ids[0]) != 1 {
		t.Fatalf("at FollowUp: %d result entries, %d notifications", countCustom(got[0].tr, ResultType), countNotifications(got[0].tr, ids[0]))
	}
	if len(e.followEvs) != 0 {
		t.Fatalf("the Manager ran a follow-up itself: %d events", len(e.followEvs))
	}
}

// Aborting the parent run stops its foreground child: the child's run is
// aborted, the agent call has its (cancelled) result, and nothing leaks
// (goleak in TestMain).
func TestParentAbortStopsForegroundChild(t *testing.T) {
	never := make(chan struct{})
	child := script(func(req *llm.Request) faux.Step { return faux.Say("never").WithHold(never) })
	parent := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			return faux.Call("", ToolAgent, agentArgs("slow", "take your time", false))
		}
		return faux.Say("unreachable")
	})
	e := newEnv(t, parent, child, nil, nil)
	run, err := e.r.Start(context.Background(), e.request(parent, "go", runner.SessionSpec{}))
	if err != nil {
		t.Fatal(err)
	}
	go drain(run, nil)
	waitFor(t, "the child to stream", func() bool { return child.Calls() > 0 })
	run.Abort()
	res, _ := run.Wait()
	if res.Reason != runner.ReasonAborted {
		t.Fatalf("parent ended %s", res.Reason)
	}
	ends := e.childEvents(string(runner.EventRunEnd))
	if len(ends) != 1 || ends[0].ev.End.Reason != runner.ReasonAborted {
		t.Fatalf("child run_end %+v", ends)
	}
	tr := e.load(res.SessionID)
	checkPairing(t, messages(tr))
	var rec ResultRecord
	for _, en := range tr.Entries {
		if en.CustomType == ResultType {
			_ = json.Unmarshal(en.Data, &rec)
		}
	}
	if rec.Status != StatusCancelled {
		t.Fatalf("result entry %+v", rec)
	}
	if n := len(e.m.Live()); n != 0 {
		t.Fatalf("%d tasks still live", n)
	}
}

// An interrupt spares background children by default (they finish and
// report to the idle session); with StopBackgroundOnInterrupt they are
// stopped and report cancelled.
func TestInterruptAndBackgroundChildren(t *testing.T) {
	for _, stopOnInterrupt := range []bool{false, true} {
		name := "survive"
		if stopOnInterrupt {
			name = "stopped"
		}
		t.Run(name, func(t *testing.T) {
			hold := make(chan struct{})
			child := script(func(req *llm.Request) faux.Step { return faux.Say("finished anyway").WithHold(hold) })
			parent := script(func(req *llm.Request) faux.Step {
				switch {
				case hasNotification(req):
					return faux.Say("noted")
				case toolResults(req) == 0:
					return faux.Call("", ToolAgent, agentArgs("bg", "work", true))
				}
				return faux.Call("", "block", map[string]any{})
			})
			e := newEnv(t, parent, child, nil, func(c *Config) { c.StopBackgroundOnInterrupt = stopOnInterrupt }, blockTool())
			run, err := e.r.Start(context.Background(), e.request(parent, "go", runner.SessionSpec{}))
			if err != nil {
				t.Fatal(err)
			}
			go drain(run, nil)
			waitFor(t, "the parent to block", func() bool { return parent.Calls() >= 2 && child.Calls() > 0 })
			run.Abort()
			res, _ := run.Wait()
			if !stopOnInterrupt {
				if len(e.m.Live()) != 1 {
					t.Fatalf("the background child did not survive the interrupt")
				}
				close(hold)
			}
			e.m.Wait()
			tr := e.load(res.SessionID)
			var rec ResultRecord
			for _, en := range tr.Entries {
				if en.CustomType == ResultType {
					_ = json.Unmarshal(en.Data, &rec)
				}
			}
			want := StatusCompleted
			if stopOnInterrupt {
				want = StatusCancelled
			}
			if rec.Status != want || countCustom(tr, ResultType) != 1 || countNotifications(tr, rec.TaskID) != 1 {
				t.Fatalf("result %+v (%d entries, %d notifications), want %s", rec, countCustom(tr, ResultType), countNotifications(tr, rec.TaskID), want)
			}
			checkPairing(t, messages(tr))
			if stopOnInterrupt {
				close(hold)
			}
		})
	}
}

// A result steered into a busy parent whose run is then aborted before it
// reads the steer: the steered message dies with the run, so the result
// is delivered once more to the idle session (its notification, a
// follow-up run), exactly once in all, and the subagent_end is not sent
// twice.
func TestSteeredResultOutlivesAbortedParent(t *testing.T) {
	never := make(chan struct{})
	child := script(func(req *llm.Request) faux.Step { return faux.Say("early finding") })
	parent := script(func(req *llm.Request) faux.Step {
		switch {
		case hasNotification(req):
			return faux.Say("noted: " + lastUserText(req))
		case toolResults(req) == 0:
			return faux.Call("", ToolAgent, agentArgs("look", "look", true))
		}
		return faux.Say("never finished").WithHold(never)
	})
	e := newEnv(t, parent, child, nil, nil)
	steered := make(chan struct{})
	q := e.request(parent, "go", runner.SessionSpec{})
	inner := q.OnEvent
	q.OnEvent = func(ev runner.Event) {
		inner(ev)
		if ev.Type == runner.EventSubagentEnd {
			close(steered)
		}
	}
	run, err := e.r.Start(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	go drain(run, nil)
	<-steered // the result is steered into the run, which is held mid-reply
	run.Abort()
	res, _ := run.Wait()
	if res.Reason != runner.ReasonAborted {
		t.Fatalf("the parent run ended %s", res.Reason)
	}
	e.m.Wait()
	tr := e.load(run.SessionID())
	ids := taskIDOf(t, messages(tr))
	if len(ids) != 1 || countCustom(tr, ResultType) != 1 || countNotifications(tr, ids[0]) != 1 {
		t.Fatalf("tasks %v, %d result entries, %d notifications", ids, countCustom(tr, ResultType), countNotifications(tr, ids[0]))
	}
	msgs := messages(tr)
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleAssistant || !strings.Contains(last.Text(), "early finding") {
		t.Fatalf("the last message is %s %q: the result was not read", last.Role, last.Text())
	}
	if n := len(e.parentEvents(string(runner.EventSubagentEnd))); n != 1 {
		t.Fatalf("%d subagent_end on the parent's stream", n)
	}
	for _, ev := range e.followEvs {
		if ev.Type == runner.EventSubagentEnd {
			t.Fatalf("a second subagent_end on the follow-up stream")
		}
	}
}
