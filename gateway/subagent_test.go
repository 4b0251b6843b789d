package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/subagent"
)

// withAgents gives every run the agent tools of one subagent Manager whose
// idle deliveries come back through Server.FollowUp, as agentloop serve
// wires them. The Manager is closed before the server shuts down.
func withAgents(mp **subagent.Manager) serverOpt {
	return func(c *Config, tsv *testServer) {
		var once sync.Once
		var mErr error
		prepare := c.Prepare
		c.Prepare = func(ctx context.Context, rs RunSettings) (runner.Request, error) {
			q, err := prepare(ctx, rs)
			if err != nil {
				return q, err
			}
			once.Do(func() {
				child := q
				child.Approval = nil
				*mp, mErr = subagent.New(subagent.Config{Runner: tsv.rn, Store: tsv.store, Cwd: rs.Cwd, Child: child,
					FollowUp: tsv.s.FollowUp})
				if mErr == nil {
					tsv.t.Cleanup(func() { (*mp).Close() })
				}
			})
			if mErr != nil {
				return q, mErr
			}
			for _, t := range (*mp).Tools() {
				if err := q.Tools.Add(t); err != nil {
					return q, err
				}
			}
			return q, nil
		}
	}
}

// agentScript is a model for a parent and its child: the parent calls
// agent (background or not) and answers after it; the child calls echo
// and answers; a parent that reads a task notification says so.
func agentScript(background bool, hold <-chan struct{}) *faux.Model {
	m := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
		results, notified := 0, false
		for _, msg := range req.Messages {
			if msg.Role == llm.RoleToolResult {
				results++
			}
			if msg.Role == llm.RoleUser && strings.Contains(msg.Text(), "<task-notification") {
				notified = true
			}
		}
		if strings.Contains(req.SystemPrompt, "[Subagent Context]") {
			if results == 0 {
				return faux.Reply(faux.ToolCall("echo", map[string]any{"text": "from the child"}))
			}
			s := faux.Say("child done")
			if hold != nil {
				s = s.WithHold(hold)
			}
			return s
		}
		switch {
		case notified:
			return faux.Say("noted the result")
		case results == 0:
			return faux.Reply(faux.ToolCall("agent", map[string]any{"description": "look around", "prompt": "echo something",
				"background": background}))
		}
		return faux.Say("parent done")
	}))
	m.Repeat = true
	return m
}

// Issue 24 on the gateway: a model on a gateway session starts a child;
// the child's call needing approval reaches the gateway as
// approval_requested naming its task (and the parent's own call names
// none); the session's stream has subagent_start and subagent_end.
func TestSubagentApprovalNamesTheTask(t *testing.T) {
	var m *subagent.Manager
	tsv := newTestServer(t, nil, askEverything, withAgents(&m))
	tsv.model = agentScript(false, nil)
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	defer st.close()
	info, _ := tsv.startRun(sess.ID, "go", "k", "")

	var taskIDs []string
	var seen []sseMsg
	for range 2 {
		got := st.until(t, EventApprovalRequested)
		seen = append(seen, got...)
		req := got[len(got)-1].fields(t)
		var pend struct{ Pending []PendingAction }
		tsv.do("GET", "/v1/runs/"+info.RunID+"/pending", nil, &pend)
		switch req["toolName"] {
		case "agent":
			if req["taskId"] != nil || len(pend.Pending) != 1 || pend.Pending[0].TaskID != "" {
				t.Fatalf("the parent's own call names a task: %v %+v", req, pend)
			}
		case "echo":
			id, _ := req["taskId"].(string)
			if !strings.HasPrefix(id, "t_") || req["agent"] != subagent.GeneralAgent || req["runId"] != info.RunID {
				t.Fatalf("the child's approval_requested: %v", req)
			}
			if len(pend.Pending) != 1 || pend.Pending[0].TaskID != id || pend.Pending[0].Agent != subagent.GeneralAgent {
				t.Fatalf("pending: %+v", pend)
			}
			taskIDs = append(taskIDs, id)
		default:
			t.Fatalf("approval_requested: %v", req)
		}
		if code := tsv.do("POST", "/v1/approvals/"+req["approvalId"].(string), ApprovalAnswer{Decision: DecisionAllowOnce}, nil); code != http.StatusOK {
			t.Fatalf("answer: %d", code)
		}
	}
	if len(taskIDs) != 1 {
		t.Fatalf("the child's approvals: %v", taskIDs)
	}
	var start, end map[string]any
	for _, msg := range append(seen, st.until(t, "run_end")...) {
		switch msg.event {
		case string(runner.EventSubagentStart):
			start = msg.fields(t)
		case string(runner.EventSubagentEnd):
			end = msg.fields(t)
		}
	}
	if start["taskId"] != taskIDs[0] || end["taskId"] != taskIDs[0] || end["status"] != subagent.StatusCompleted || end["runId"] != info.RunID {
		t.Fatalf("subagent_start %v, subagent_end %v", start, end)
	}
	var r Run
	tsv.do("GET", "/v1/runs/"+info.RunID, nil, &r)
	if r.Status != RunSucceeded {
		t.Fatalf("run %+v", r)
	}
}

// A background child that ends after its parent's run: the gateway
// session gets a follow-up run of its own, whose stream starts with the
// task's subagent_end and whose answer reads the result; exactly one.
func TestSubagentBackgroundFollowUpRun(t *testing.T) {
	var m *subagent.Manager
	hold := make(chan struct{})
	tsv := newTestServer(t, nil, withAgents(&m))
	tsv.model = agentScript(true, hold)
	sess := tsv.newSession()
	first, msgs := tsv.runToIdle(sess.ID, "go", "k")
	var taskID string
	for _, msg := range msgs {
		if msg.event == string(runner.EventSubagentStart) {
			taskID, _ = msg.fields(t)["taskId"].(string)
		}
	}
	if taskID == "" {
		t.Fatalf("no subagent_start on the first run's stream")
	}
	var v Session
	tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v)
	st := tsv.events("/v1/sessions/"+sess.ID+"/events?after="+strconv.FormatInt(v.HeadSeq, 10), nil)
	defer st.close()
	close(hold)
	got := st.until(t, "run_end")
	m.Wait()
	var end map[string]any
	var runIDs []string
	answer := ""
	for _, msg := range got {
		f := msg.fields(t)
		switch msg.event {
		case string(runner.EventSubagentEnd):
			end = f
		case "run_start":
			runIDs = append(runIDs, f["runId"].(string))
		case "message_end":
			if mm, ok := f["message"].(map[string]any); ok && mm["role"] == "assistant" {
				answer = m2s(mm["content"])
			}
		}
	}
	if end == nil || end["taskId"] != taskID || end["status"] != subagent.StatusCompleted || end["background"] != true {
		t.Fatalf("subagent_end %v", end)
	}
	if len(runIDs) != 1 || runIDs[0] == first.RunID || end["runId"] != runIDs[0] || !strings.Contains(answer, "noted the result") {
		t.Fatalf("follow-up runs %v (first %s), subagent_end of %v, answer %q", runIDs, first.RunID, end["runId"], answer)
	}
	var r Run
	tsv.do("GET", "/v1/runs/"+runIDs[0], nil, &r)
	if r.Status != RunSucceeded {
		t.Fatalf("follow-up run %+v", r)
	}
	tr, err := tsv.store.Load(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	results, notes := 0, 0
	for _, e := range tr.Entries {
		if e.CustomType == subagent.ResultType {
			results++
		}
		if e.Message != nil && e.Message.Role == llm.RoleUser && strings.Contains(e.Message.Text(), "<task-notification") {
			notes++
		}
	}
	if results != 1 || notes != 1 {
		t.Fatalf("%d result entries, %d notifications", results, notes)
	}
}

// FollowUp while the session is busy starts no run then: its subagent_end
// goes out. A run that had not opened the session yet reads what was
// appended; when it never gets to (it fails to start), one follow-up run
// starts after it, as the transcript ends with a user message nobody
// answered.
func TestFollowUpWhileBusy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failStart bool
		wantMore  int // runs after the busy one
	}{{"run-fails-to-start", true, 1}, {"run-reads-it", false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			entered, gate := make(chan struct{}), make(chan bool)
			var calls int
			var mu sync.Mutex
			tsv := newTestServer(t, []faux.Step{faux.Say("hi"), faux.Say("read it")}, func(c *Config, _ *testServer) {
				prepare := c.Prepare
				c.Prepare = func(ctx context.Context, rs RunSettings) (runner.Request, error) {
					mu.Lock()
					calls++
					n := calls
					mu.Unlock()
					if n == 2 { // the busy run: held before it opens the session
						close(entered)
						if fail := <-gate; fail {
							return runner.Request{}, errors.New("no model today")
						}
					}
					return prepare(ctx, rs)
				}
			})
			sess := tsv.newSession()
			tsv.runToIdle(sess.ID, "hello", "k1")
			var v Session
			tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v)
			st := tsv.events("/v1/sessions/"+sess.ID+"/events?after="+strconv.FormatInt(v.HeadSeq, 10), nil)
			defer st.close()
			started := make(chan RunInfo, 1)
			go func() { // the start answers once the run is prepared
				info, _ := tsv.startRun(sess.ID, "next", "k2", "")
				started <- info
			}()
			<-entered
			// What a subagent.Manager does for an idle parent: the
			// notification appended under the session's lock.
			ss, err := tsv.store.Open(context.Background(), sess.ID, &session.LockOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ss.Append(context.Background(), session.MessageEntry(llm.UserText(`<task-notification task="t_1">found it</task-notification>`))); err != nil {
				t.Fatal(err)
			}
			ss.Close()
			end := runner.Event{Type: runner.EventSubagentEnd, Subagent: &runner.Subagent{TaskID: "t_1", Status: subagent.StatusCompleted, Background: true}}
			tsv.s.FollowUp(sess.ID, &end)
			gate <- tc.failStart
			busy := <-started
			var got []sseMsg
			for {
				ms := st.until(t, EventSessionStatus)
				got = append(got, ms...)
				if ms[len(ms)-1].fields(t)["status"] == StatusIdle {
					break
				}
			}
			var more []string
			ends := 0
			for _, m := range got {
				switch m.event {
				case "run_start":
					if id := m.fields(t)["runId"].(string); id != busy.RunID {
						more = append(more, id)
					}
				case string(runner.EventSubagentEnd):
					ends++
				}
			}
			if ends != 1 || len(more) != tc.wantMore {
				t.Fatalf("%d subagent_end, runs after the busy one %v, want %d", ends, more, tc.wantMore)
			}
			tr, err := tsv.store.Load(context.Background(), sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			last := tr.Entries[len(tr.Entries)-1].Message
			if last == nil || last.Role != llm.RoleAssistant || last.Text() != "read it" {
				t.Fatalf("the transcript ends with %+v: the notification was not answered", last)
			}
		})
	}
}
