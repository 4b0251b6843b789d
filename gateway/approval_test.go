package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

func askEverything(_ *Config, tsv *testServer) { tsv.policy = tool.ApproveAsk }

// A call that needs approval: the session shows requires_action, the
// action is listed and re-sent to a client that reconnects, the first
// answer wins and the second gets 409, and the call runs.
func TestApprovalRoundTrip(t *testing.T) {
	tsv := newTestServer(t, script(), askEverything)
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	info, _ := tsv.startRun(sess.ID, "go", "k", "")
	got := st.until(t, EventApprovalRequested)
	req := got[len(got)-1].fields(t)
	apID, _ := req["approvalId"].(string)
	if !strings.HasPrefix(apID, "ap_") || req["toolName"] != "echo" || req["runId"] != info.RunID {
		t.Fatalf("approval_requested: %v", req)
	}
	st.close() // the client goes away: nothing changes

	var v Session
	tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v)
	if v.Status != StatusRequiresAction || v.ActiveRunID != info.RunID {
		t.Fatalf("session: %+v", v)
	}
	var pend struct{ Pending []PendingAction }
	tsv.do("GET", "/v1/runs/"+info.RunID+"/pending", nil, &pend)
	if len(pend.Pending) != 1 || pend.Pending[0].ID != apID || string(pend.Pending[0].Args) != `{"text":"hi"}` {
		t.Fatalf("pending: %+v", pend)
	}

	// Reconnecting after everything seen: the pending action is sent
	// again, without an id, so Last-Event-ID does not move back.
	last := got[len(got)-1].id
	again := tsv.events("/v1/sessions/"+sess.ID+"/events", http.Header{"Last-Event-ID": {last}})
	// (The replay of what followed it comes first: its session_status.)
	re := again.until(t, EventApprovalRequested)
	if m := re[len(re)-1]; m.id != "" || m.fields(t)["approvalId"] != apID {
		t.Fatalf("on reconnect: %+v", m)
	}
	// A fresh client with no Last-Event-ID gets it too.
	fresh := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	if m := <-fresh.msgs; m.event != EventApprovalRequested {
		t.Fatalf("fresh client: %+v", m)
	}
	fresh.close()

	if code := tsv.do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionAllowOnce}, nil); code != http.StatusOK {
		t.Fatalf("first answer: %d", code)
	}
	var e wireError
	if code := tsv.do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionDeny}, &e); code != http.StatusConflict || e.Error.Code != CodeAlreadyResolved {
		t.Fatalf("second answer: %d %+v", code, e)
	}
	rest := again.until(t, "run_end")
	var resolved, result map[string]any
	for _, m := range rest {
		switch m.event {
		case EventApprovalResolved:
			resolved = m.fields(t)
		case "tool_execution_end":
			result = m.fields(t)
		}
	}
	if resolved["decision"] != DecisionAllowOnce || resolved["by"] != "client" {
		t.Fatalf("approval_resolved: %v", resolved)
	}
	if result["isError"] == true || !strings.Contains(m2s(result["result"]), "echo: hi") {
		t.Fatalf("tool result: %v", result)
	}
}

// Aborting a run whose call waits for approval resolves it cancelled,
// ends the run aborted, and leaves the call paired with a denied result.
func TestAbortWhileApprovalPending(t *testing.T) {
	tsv := newTestServer(t, script(), askEverything)
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	info, _ := tsv.startRun(sess.ID, "go", "k", "")
	got := st.until(t, EventApprovalRequested)
	apID := got[len(got)-1].fields(t)["approvalId"].(string)
	if code := tsv.do("POST", "/v1/runs/"+info.RunID+"/abort", nil, nil); code != http.StatusAccepted {
		t.Fatalf("abort: %d", code)
	}
	rest := st.until(t, "run_end")
	var resolved map[string]any
	for _, m := range rest {
		if m.event == EventApprovalResolved {
			resolved = m.fields(t)
		}
	}
	if resolved["approvalId"] != apID || resolved["decision"] != DecisionCancelled {
		t.Fatalf("approval_resolved: %v (%v)", resolved, types(rest))
	}
	if end := rest[len(rest)-1].fields(t); end["reason"] != "aborted" {
		t.Fatalf("run_end: %v", end)
	}
	var e wireError
	if code := tsv.do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionAllowOnce}, &e); code != http.StatusConflict {
		t.Fatalf("answer after abort: %d %+v", code, e)
	}
	// The transcript pairs the call with a result.
	tr, err := tsv.store.Load(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	calls, results := 0, 0
	for _, en := range tr.Entries {
		if en.Message == nil {
			continue
		}
		for _, c := range en.Message.Content {
			if c.Type == llm.ContentToolCall {
				calls++
			}
		}
		if en.Message.Role == llm.RoleToolResult {
			results++
		}
	}
	if calls != 1 || results != 1 {
		t.Fatalf("transcript: %d calls, %d results", calls, results)
	}
}

// An approval no one answers in ApprovalTimeout is denied with a reason
// the model reads; the run goes on.
func TestApprovalTimeout(t *testing.T) {
	tsv := newTestServer(t, script(), askEverything, func(c *Config, _ *testServer) { c.ApprovalTimeout = 50e6 })
	sess := tsv.newSession()
	_, msgs := tsv.runToIdle(sess.ID, "go", "k")
	var resolved, result map[string]any
	for _, m := range msgs {
		switch m.event {
		case EventApprovalResolved:
			resolved = m.fields(t)
		case "tool_execution_end":
			result = m.fields(t)
		}
	}
	if resolved["decision"] != DecisionTimeout || result["isError"] != true || !strings.Contains(m2s(result["result"]), "nobody answered") {
		t.Fatalf("resolved %v, result %v", resolved, result)
	}
}

func m2s(v any) string {
	b, _ := jsonMarshal(v)
	return string(b)
}

// A client that resumes from before a pending approval's event gets it
// once, in the replay (with its id), not also re-sent without an id: a
// resume is exactly the events after Last-Event-ID. Over a run stream too.
func TestResumeBeforeApprovalSendsItOnce(t *testing.T) {
	tsv := newTestServer(t, script(), askEverything)
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	info, _ := tsv.startRun(sess.ID, "go", "k", "")
	got := st.until(t, EventApprovalRequested)
	st.close()
	apID, _ := got[len(got)-1].fields(t)["approvalId"].(string)
	first := got[0].id // run_start's: the approval came after it
	streams := map[string]*sseStream{
		"session": tsv.events("/v1/sessions/"+sess.ID+"/events", http.Header{"Last-Event-ID": {first}}),
		"run":     tsv.events("/v1/runs/"+info.RunID+"/events", http.Header{"Last-Event-ID": {first}}),
	}
	if code := tsv.do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionAllowOnce}, nil); code != http.StatusOK {
		t.Fatalf("answer: %d", code)
	}
	for name, s := range streams {
		n := 0
		for _, m := range s.until(t, "run_end") {
			if m.event == EventApprovalRequested {
				n++
				if m.id == "" {
					t.Errorf("%s: approval_requested re-sent without an id after its replay", name)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s stream: approval_requested %d times, want 1", name, n)
		}
		s.close()
	}
}

// The ids of answered approvals (kept so a late answer is 409, not 404)
// are forgotten with their run: a long-lived server asking for approvals
// all day does not grow without bound.
func TestAnsweredApprovalsAreForgottenWithTheirRun(t *testing.T) {
	defer func(n int) { keptRuns = n }(keptRuns)
	keptRuns = 2
	tsv := newTestServer(t, script(), askEverything)
	tsv.model.Repeat = true
	sess := tsv.newSession()
	var first string
	for i := 0; i < 5; i++ {
		info, _ := tsv.startRun(sess.ID, "go", "k"+strconv.Itoa(i), "")
		st := tsv.events("/v1/runs/"+info.RunID+"/events", nil)
		got := st.until(t, EventApprovalRequested)
		apID, _ := got[len(got)-1].fields(t)["approvalId"].(string)
		if code := tsv.do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionAllowOnce}, nil); code != http.StatusOK {
			t.Fatalf("answer %d: %d", i, code)
		}
		st.until(t, "run_end")
		st.close()
		tsv.s.mu.Lock()
		rs := tsv.s.runs[info.RunID]
		tsv.s.mu.Unlock()
		<-rs.finished // retired: the oldest run beyond keptRuns is forgotten
		if i == 0 {
			first = apID
		}
		if i == keptRuns-1 {
			// Its run is still kept: a late answer is 409.
			if code := tsv.do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionDeny}, nil); code != http.StatusConflict {
				t.Fatalf("late answer of a kept run: %d", code)
			}
		}
	}
	tsv.s.mu.Lock()
	n := len(tsv.s.resolved)
	tsv.s.mu.Unlock()
	if n > keptRuns {
		t.Fatalf("%d answered approvals remembered, %d runs kept", n, keptRuns)
	}
	if code := tsv.do("POST", "/v1/approvals/"+first, ApprovalAnswer{Decision: DecisionDeny}, nil); code != http.StatusNotFound {
		t.Fatalf("answer of a forgotten run's approval: %d", code)
	}
}

// awaitApproval starts a run on a new session whose call asks, and
// returns once its approval_requested arrived on the session's stream.
func awaitApproval(t *testing.T) (tsv *testServer, sess Session, st *sseStream, info RunInfo, apID string) {
	t.Helper()
	tsv = newTestServer(t, script(), askEverything)
	sess = tsv.newSession()
	st = tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	info, _ = tsv.startRun(sess.ID, "go", "k", "")
	got := st.until(t, EventApprovalRequested)
	apID, _ = got[len(got)-1].fields(t)["approvalId"].(string)
	return tsv, sess, st, info, apID
}

// Sixteen answers race for one pending action: exactly one wins (200),
// the rest get 409, and the stream says approval_resolved once, with the
// winner's decision.
func TestApprovalAnswersRace(t *testing.T) {
	tsv, _, st, _, apID := awaitApproval(t)
	decisions := []string{DecisionAllowOnce, DecisionDeny, DecisionAllowSession}
	codes := make([]int, 16)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			<-start
			codes[i] = tsv.do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: decisions[i%3]}, nil)
		})
	}
	close(start)
	wg.Wait()
	won := -1
	for i, c := range codes {
		switch {
		case c == http.StatusOK && won < 0:
			won = i
		case c != http.StatusConflict:
			t.Errorf("answer %d: %d", i, c)
		}
	}
	if won < 0 {
		t.Fatal("no answer won")
	}
	n := 0
	for _, m := range st.until(t, "run_end") {
		if m.event == EventApprovalResolved {
			n++
			if d := m.fields(t)["decision"]; d != decisions[won%3] {
				t.Errorf("resolved %v, the winner said %s", d, decisions[won%3])
			}
		}
	}
	if n != 1 {
		t.Errorf("approval_resolved %d times", n)
	}
}

// Shutdown while a call waits for its approval and two clients stream:
// at the deadline the run is aborted, the action resolved cancelled, both
// streams end after run_end, and (goleak, main_test.go) nothing is left
// running.
func TestShutdownWithPendingApprovalAndStreams(t *testing.T) {
	tsv, _, st, info, apID := awaitApproval(t)
	rst := tsv.events("/v1/runs/"+info.RunID+"/events", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := tsv.s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want the deadline", err)
	}
	for name, s := range map[string]*sseStream{"session": st, "run": rst} {
		var resolved map[string]any
		for _, m := range s.rest(t) {
			if m.event == EventApprovalResolved {
				resolved = m.fields(t)
			}
		}
		if resolved["decision"] != DecisionCancelled || resolved["approvalId"] != apID {
			t.Errorf("%s stream: approval_resolved %v", name, resolved)
		}
	}
	var run Run
	tsv.do("GET", "/v1/runs/"+info.RunID, nil, &run)
	if run.Status != RunAborted {
		t.Errorf("run %+v", run)
	}
}
