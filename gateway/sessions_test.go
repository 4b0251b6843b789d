package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
)

// Sessions list by pages with a cursor; messages by pages with after;
// a fork copies the transcript and names its parent, which lists it as a
// child.
func TestSessionPagesAndFork(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("one"), faux.Say("two"), faux.Say("three")})
	var ids []string
	for range 3 {
		s := tsv.newSession()
		ids = append(ids, s.ID)
		tsv.runToIdle(s.ID, "go", "k")
	}
	var seen []string
	cursor := ""
	for {
		var page SessionList
		tsv.do("GET", "/v1/sessions?limit=2&cursor="+cursor, nil, &page)
		for _, s := range page.Sessions {
			seen = append(seen, s.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(seen) != 3 || seen[0] != ids[2] {
		t.Fatalf("listed %v, made %v (the most recent first)", seen, ids)
	}

	var all MessagePage
	tsv.do("GET", "/v1/sessions/"+ids[0]+"/messages", nil, &all)
	var p1, p2 MessagePage
	tsv.do("GET", "/v1/sessions/"+ids[0]+"/messages?limit=1", nil, &p1)
	tsv.do("GET", "/v1/sessions/"+ids[0]+"/messages?after="+p1.NextAfter, nil, &p2)
	if len(all.Entries) < 2 || len(p1.Entries) != 1 || len(p2.Entries) != len(all.Entries)-1 || p2.Entries[0].ID != all.Entries[1].ID {
		t.Fatalf("pages: all %d, first %d (next %q), rest %d", len(all.Entries), len(p1.Entries), p1.NextAfter, len(p2.Entries))
	}

	var fork Session
	if code := tsv.do("POST", "/v1/sessions/"+ids[0]+"/fork", map[string]any{}, &fork); code != http.StatusCreated || fork.ParentID != ids[0] || fork.ID == ids[0] {
		t.Fatalf("fork: %d %+v", code, fork)
	}
	var forked MessagePage
	tsv.do("GET", "/v1/sessions/"+fork.ID+"/messages", nil, &forked)
	if len(forked.Entries) != len(all.Entries) {
		t.Fatalf("the fork has %d entries, its parent %d", len(forked.Entries), len(all.Entries))
	}
	var kids SessionList
	tsv.do("GET", "/v1/sessions/"+ids[0]+"/children", nil, &kids)
	if len(kids.Sessions) != 1 || kids.Sessions[0].ID != fork.ID {
		t.Fatalf("children: %+v", kids)
	}
	if code := tsv.do("GET", "/v1/sessions/nope", nil, nil); code != http.StatusNotFound {
		t.Fatalf("unknown session: %d", code)
	}
}

// A run whose Prepare fails ends at once, failed, with a run_end that
// says why; the session is free for the next one.
func TestRunThatCannotStart(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	tsv := newTestServer(t, []faux.Step{faux.Say("fine")}, func(c *Config, _ *testServer) {
		prep := c.Prepare
		c.Prepare = func(ctx context.Context, rs RunSettings) (runner.Request, error) {
			if fail.Load() {
				return runner.Request{}, errors.New("no such model: x/y")
			}
			return prep(ctx, rs)
		}
	})
	sess := tsv.newSession()
	info, msgs := tsv.runToIdle(sess.ID, "go", "a")
	var end map[string]any
	for _, m := range msgs {
		if m.event == "run_end" {
			end = m.fields(t)
		}
	}
	if end["reason"] != "start_failed" || !strings.Contains(end["text"].(string), "no such model") {
		t.Fatalf("run_end: %v", end)
	}
	var r Run
	tsv.do("GET", "/v1/runs/"+info.RunID, nil, &r)
	if r.Status != RunFailed || !strings.Contains(r.Error, "no such model") {
		t.Fatalf("run: %+v", r)
	}
	fail.Store(false)
	if _, msgs := tsv.runToIdle(sess.ID, "go", "b"); !hasEvent(msgs, "message_end") {
		t.Fatalf("the next run: %v", types(msgs))
	}
}

// A quiet stream gets a keepalive comment every Heartbeat.
func TestHeartbeat(t *testing.T) {
	tsv := newTestServer(t, nil, func(c *Config, _ *testServer) { c.Heartbeat = 20 * time.Millisecond })
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	for range 2 {
		select {
		case c := <-st.comments:
			if !strings.HasPrefix(c, ": keepalive ") {
				t.Fatalf("comment %q", c)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no keepalive")
		}
	}
}

// A deleted session takes its runs with it: a client that makes a session
// per task and deletes it after does not leave every run (and its answered
// approvals) in the server's memory, and the run ids are gone (404).
func TestDeletedSessionForgetsItsRuns(t *testing.T) {
	tsv := newTestServer(t, script(), askEverything)
	tsv.model.Repeat = true
	var runIDs []string
	for i := 0; i < 3; i++ {
		sess := tsv.newSession()
		info, _ := tsv.startRun(sess.ID, "go", "k", "")
		st := tsv.events("/v1/runs/"+info.RunID+"/events", nil)
		got := st.until(t, EventApprovalRequested)
		apID, _ := got[len(got)-1].fields(t)["approvalId"].(string)
		if code := tsv.do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionAllowOnce}, nil); code != http.StatusOK {
			t.Fatalf("answer: %d", code)
		}
		st.until(t, "run_end")
		st.close()
		if code := tsv.do("DELETE", "/v1/sessions/"+sess.ID, nil, nil); code != http.StatusOK {
			t.Fatalf("delete: %d", code)
		}
		runIDs = append(runIDs, info.RunID)
	}
	tsv.s.mu.Lock()
	runs, resolved := len(tsv.s.runs), len(tsv.s.resolved)
	tsv.s.mu.Unlock()
	if runs != 0 || resolved != 0 {
		t.Errorf("after deleting every session: %d runs, %d answered approvals kept", runs, resolved)
	}
	for _, id := range runIDs {
		if code := tsv.do("GET", "/v1/runs/"+id, nil, nil); code != http.StatusNotFound {
			t.Errorf("run %s of a deleted session: %d", id, code)
		}
	}
}

// GET /v1/sessions/{id} counts the messages and names the title of a
// session from the store's summary of it, after each run (what a run
// appended is summed up on top of what was before).
func TestGetSessionTotals(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("one"), faux.Say("two")})
	sess := tsv.newSession()
	var v Session
	if tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v); v.Messages != 0 {
		t.Fatalf("a new session: %+v", v)
	}
	for i, want := range []int{2, 4} {
		tsv.runToIdle(sess.ID, "question "+strconv.Itoa(i), "k"+strconv.Itoa(i))
		if code := tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v); code != http.StatusOK || v.Messages != want || v.Title != "question 0" {
			t.Fatalf("after run %d: %d %+v", i, code, v)
		}
	}
}

// GET /v1/sessions/{id} with ?limit= or ?cursor= adds a page of the
// transcript's entries to the Session; without either it is the Session
// alone, as before.
func TestGetSessionPage(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("one"), faux.Say("two")})
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "first", "k1")
	tsv.runToIdle(sess.ID, "second", "k2")
	var raw map[string]any
	tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &raw)
	if _, ok := raw["entries"]; ok || raw["id"] != sess.ID {
		t.Fatalf("the default answer changed shape: %v", raw)
	}
	var all MessagePage
	tsv.do("GET", "/v1/sessions/"+sess.ID+"/messages", nil, &all)
	var p1, p2 SessionPage
	if code := tsv.do("GET", "/v1/sessions/"+sess.ID+"?limit=3", nil, &p1); code != http.StatusOK || p1.ID != sess.ID || p1.Messages != 4 ||
		len(p1.Entries) != 3 || p1.NextCursor != all.Entries[2].ID {
		t.Fatalf("first page: %d %+v", code, p1)
	}
	tsv.do("GET", "/v1/sessions/"+sess.ID+"?cursor="+p1.NextCursor, nil, &p2)
	if len(p2.Entries) != len(all.Entries)-3 || p2.Entries[0].ID != all.Entries[3].ID || p2.NextCursor != "" {
		t.Fatalf("second page: %+v (all %d)", p2, len(all.Entries))
	}
	var e wireError
	if code := tsv.do("GET", "/v1/sessions/"+sess.ID+"?cursor=nope", nil, &e); code != http.StatusBadRequest || e.Error.Code != CodeInvalidRequest {
		t.Fatalf("an unknown cursor: %d %+v", code, e)
	}
	// The same over the WebSocket's session/get.
	rpc, _ := tsv.dialWS("", nil)
	var r1 SessionPage
	rpc.result("session/get", map[string]any{"sessionId": sess.ID, "limit": 3}, &r1)
	var r0 map[string]any
	rpc.result("session/get", map[string]any{"sessionId": sess.ID}, &r0)
	if len(r1.Entries) != 3 || r1.NextCursor != p1.NextCursor || r0["entries"] != nil || r0["id"] != sess.ID {
		t.Fatalf("session/get: paged %+v, plain %v", r1, r0)
	}
}
