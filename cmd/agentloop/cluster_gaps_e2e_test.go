package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/internal/pgtest"
)

// Two servers on one database get, at once, a run start with the same
// idempotency key and different bodies: exactly one is queued (202), the
// other is refused with 422 naming the winner's run, as on one server.
func TestServeClusterIdemKeyReusedRace(t *testing.T) {
	dsn := pgtest.Start(t).Schema(t)
	ws := t.TempDir()
	nodes := clusterNodes(t, 2, dsn, ws, "-rounds", "0", "-text", "2")
	db := pgPool(t, dsn)
	var sess struct{ ID string }
	if st := nodes[0].call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 {
		t.Fatalf("create session: %d", st)
	}
	type answer struct {
		code  int
		RunID string
		Error struct {
			Code    string
			Details map[string]any
		}
	}
	for i := range 5 {
		key := fmt.Sprintf("k%d", i)
		var got [2]answer
		var wg sync.WaitGroup
		for j, n := range nodes {
			wg.Go(func() {
				got[j].code = n.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "",
					map[string]any{"input": fmt.Sprintf("question %d from node %d", i, j), "idempotencyKey": key}, &got[j])
			})
		}
		wg.Wait()
		win, lose := got[0], got[1]
		if win.code != 202 {
			win, lose = lose, win
		}
		if win.code != 202 || lose.code != 422 || lose.Error.Code != "idempotency_key_reused" || lose.Error.Details["runId"] != win.RunID {
			t.Fatalf("key %s: answers %+v, want one 202 and one 422 idempotency_key_reused naming its run", key, got)
		}
		waitRunStatus(t, db, win.RunID, "succeeded", 20*time.Second)
		// A retry with the winner's body is still the winner's run.
		var again answer
		winner := 0
		if got[1].code == 202 {
			winner = 1
		}
		again.code = nodes[1-winner].call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "",
			map[string]any{"input": fmt.Sprintf("question %d from node %d", i, winner), "idempotencyKey": key}, &again)
		if again.code != 202 || again.RunID != win.RunID {
			t.Fatalf("key %s: the retry with the same body: %d %s, want 202 %s", key, again.code, again.RunID, win.RunID)
		}
	}
	var runs int
	_ = db.QueryRow(t.Context(), `SELECT count(*) FROM runs WHERE session_id = $1`, sess.ID).Scan(&runs)
	if runs != 5 {
		t.Fatalf("%d runs queued, want 5", runs)
	}
}

// --approve ask on two servers: a client that connects to the node not
// running the run, after the run asked for an approval, gets the request
// (the same event the run's node sent, without an id: a live-only stream,
// and one resuming after it), answers it there, and the call runs once.
func TestServeClusterPendingApprovalToLateSubscriber(t *testing.T) {
	ar := startAskedRun(t)
	owner, other, db, ws := ar.owner, ar.other, ar.db, ar.ws
	sess := struct{ ID string }{ar.sessionID}
	run := struct{ RunID string }{ar.runID}
	// Wait until the request is stored: the run's node has sent it.
	var stored string
	var seq int64
	deadline := time.Now().Add(20 * time.Second)
	for stored == "" {
		_ = db.QueryRow(t.Context(), `SELECT seq, data::text FROM session_events WHERE run_id = $1 AND type = 'approval_requested'`,
			run.RunID).Scan(&seq, &stored)
		if time.Now().After(deadline) {
			t.Fatalf("no approval_requested stored: %s", owner.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(stored), &want); err != nil {
		t.Fatal(err)
	}
	apID, _ := want["approvalId"].(string)
	for _, path := range []string{
		"/v1/sessions/" + sess.ID + "/events",                                     // live only
		"/v1/sessions/" + sess.ID + "/events?after=" + strconv.FormatInt(seq, 10), // resuming after it
		"/v1/runs/" + run.RunID + "/events?after=" + strconv.FormatInt(seq, 10),
	} {
		// After the replay (if any), before anything live: the request.
		st := other.stream(t, path)
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case ev := <-st:
				if ev.typ != "approval_requested" {
					if ev.seq <= seq {
						t.Fatalf("%s: event %s with seq %d, at or before the one resumed after", path, ev.typ, ev.seq)
					}
					continue
				}
				if ev.seq != 0 || !reflect.DeepEqual(ev.data, want) {
					t.Fatalf("%s: got approval_requested (id %d) %v, want the stored one without an id: %v", path, ev.seq, ev.data, want)
				}
				break wait
			case <-timeout:
				t.Fatalf("%s: the pending approval was not sent to a client connecting to the other node", path)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "started.txt")); err == nil {
		t.Fatal("the call ran before it was approved")
	}
	live := other.stream(t, "/v1/sessions/"+sess.ID+"/events")
	if ev := <-live; ev.typ != "approval_requested" {
		t.Fatalf("first event %s", ev.typ)
	}
	if code := other.call(t, "POST", "/v1/approvals/"+apID, "", map[string]any{"decision": "allow_once"}, nil); code != 200 {
		t.Fatalf("answer on the other node: %d", code)
	}
	got := untilRunEnd(t, live, run.RunID, 20*time.Second)
	resolved := false
	for _, ev := range got {
		if ev.typ == "approval_resolved" && ev.data["approvalId"] == apID {
			resolved = true
		}
	}
	if !resolved {
		t.Errorf("no approval_resolved on the late client's stream")
	}
	waitRunStatus(t, db, run.RunID, "succeeded", 20*time.Second)
	if b, _ := os.ReadFile(filepath.Join(ws, "started.txt")); strings.Count(string(b), "start") != 1 {
		t.Fatalf("the approved call ran %d times", strings.Count(string(b), "start"))
	}
	// Once answered, a new client is not asked again.
	st := other.stream(t, "/v1/sessions/"+sess.ID+"/events?after="+strconv.FormatInt(seq, 10))
	for ev := range st {
		if ev.typ == "approval_requested" {
			t.Fatalf("an answered approval was sent to a new client: %v", ev.data)
		}
		if ev.typ == "run_end" {
			break
		}
	}
}

// DELETE and /compact on a node while another node runs the session are
// refused with 409 session_busy; the run finishes untouched on its node,
// its transcript whole; the refused node still runs the session, and
// deletes it once it is idle.
func TestServeClusterDeleteCompactWhileRunElsewhere(t *testing.T) {
	cr := startClusterRun(t, nil, nil, "-rounds", "1", "-text", "3", "-cmd", "echo start >> started.txt; sleep 3")
	other, db := cr.other, cr.db
	waitToolStarted(t, cr.owner, cr.ws)
	var e struct {
		Error struct {
			Code    string
			Details map[string]any
		}
	}
	if code := other.call(t, "DELETE", "/v1/sessions/"+cr.sessionID, "", nil, &e); code != 409 || e.Error.Code != "session_busy" || e.Error.Details["activeRunId"] != cr.runID {
		t.Errorf("DELETE on the other node during the run: %d %+v, want 409 session_busy naming the run", code, e.Error)
	}
	e.Error.Code = ""
	if code := other.call(t, "POST", "/v1/sessions/"+cr.sessionID+"/command", "", map[string]any{"name": "compact"}, &e); code != 409 || e.Error.Code != "session_busy" {
		t.Errorf("/compact on the other node during the run: %d %+v, want 409 session_busy", code, e.Error)
	}
	waitRunStatus(t, db, cr.runID, "succeeded", 30*time.Second)
	tr, err := pgSessions(t, cr.dsn).Load(t.Context(), cr.sessionID)
	if err != nil {
		t.Fatalf("the session after the refused delete: %v", err)
	}
	results := checkTranscript(t, tr, "do it")
	if len(results) != 1 {
		t.Errorf("%d tool results, want 1", len(results))
	}
	for _, text := range results {
		if text == cluster.InterruptedText || strings.Contains(text, "abort") {
			t.Errorf("the call was cut short: %q", text)
		}
	}
	var next struct{ RunID string }
	if code := other.call(t, "POST", "/v1/sessions/"+cr.sessionID+"/runs", "", map[string]any{"input": "again", "idempotencyKey": "k2"}, &next); code != 202 {
		t.Fatalf("a run after the refused delete: %d", code)
	}
	waitRunStatus(t, db, next.RunID, "succeeded", 30*time.Second)
	if code := other.call(t, "DELETE", "/v1/sessions/"+cr.sessionID, "", nil, nil); code != 204 && code != 200 {
		t.Fatalf("DELETE once the session is idle: %d", code)
	}
	if _, err := pgSessions(t, cr.dsn).Load(t.Context(), cr.sessionID); err == nil {
		t.Fatal("the session is still in the database after DELETE")
	}
}

// SIGTERM of the node running a run, during its second (slow) tool call,
// with a 30 s lease and AGENTLOOP_CLUSTER_DRAIN=1s: the node exits within
// a few seconds, handing the run over; the other node resumes it at once
// (long before the lease could lapse) and finishes it: the first call is
// not run again and keeps its result, the interrupted one gets the
// "interrupted" result, and every entry is there once.
func TestServeClusterSIGTERMHandsOff(t *testing.T) {
	cr := startClusterRun(t, []string{envLeaseTTL + "=30s", envDrain + "=1s"}, nil, "-rounds", "2", "-text", "3",
		"-cmd", `echo start >> started.txt; if [ "$(wc -l < started.txt)" -ge 2 ]; then sleep 8; fi`)
	started := filepath.Join(cr.ws, "started.txt")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(started); strings.Count(string(b), "start") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second call never started: %s", cr.owner.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sigtermHandsOff(t, cr)
	if !strings.Contains(cr.owner.stderr.String(), "handed to another node") {
		t.Errorf("the stopping node did not say it handed its run over: %s", cr.owner.stderr)
	}
	if b, _ := os.ReadFile(started); strings.Count(string(b), "start") != 2 {
		t.Errorf("the calls ran %d times, want 2 (none again)", strings.Count(string(b), "start"))
	}
	tr, err := pgSessions(t, cr.dsn).Load(t.Context(), cr.sessionID)
	if err != nil {
		t.Fatal(err)
	}
	results := checkTranscript(t, tr, "do it")
	var interrupted int
	for _, text := range results {
		if text == cluster.InterruptedText {
			interrupted++
		}
	}
	if len(results) != 2 || interrupted != 1 {
		t.Errorf("results %q: want 2, one of them interrupted", results)
	}
}
