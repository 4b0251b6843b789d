package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/internal/pgtest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// The cluster e2e tests run three `agentloop serve --store postgres://…`
// on one database with a 3 s lease (AGENTLOOP_CLUSTER_LEASE_TTL; the
// heartbeat and the self-fence follow at 1 s and 2 s).
const e2eLease = 3 * time.Second

// sseEvent is one message of an event stream.
type sseEvent struct {
	seq  int64
	typ  string
	data map[string]any
}

// sessionStream follows a session's events on a node from seq 1.
func (sc *servedCLI) sessionStream(t *testing.T, sessionID string) <-chan sseEvent {
	t.Helper()
	return sc.stream(t, "/v1/sessions/"+sessionID+"/events?after=0")
}

// stream follows the event stream at path on a node.
func (sc *servedCLI) stream(t *testing.T, path string) <-chan sseEvent {
	t.Helper()
	req, _ := http.NewRequest("GET", sc.url+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	t.Cleanup(func() { resp.Body.Close() })
	out := make(chan sseEvent, 10000)
	go func() {
		defer close(out)
		rd := bufio.NewScanner(resp.Body)
		rd.Buffer(make([]byte, 1<<20), 16<<20)
		var ev sseEvent
		for rd.Scan() {
			line := rd.Text()
			switch {
			case line == "":
				if ev.typ != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.seq, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				ev.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &ev.data)
			}
		}
	}()
	return out
}

// clusterNodes starts k servers on one database, with the test's lease.
func clusterNodes(t *testing.T, k int, dsn, ws string, mock ...string) []*servedCLI {
	t.Helper()
	return clusterNodesWith(t, k, dsn, ws, nil, nil, mock...)
}

// clusterNodesWith is clusterNodes with more environment (which may set
// other timings) and more arguments for each server.
func clusterNodesWith(t *testing.T, k int, dsn, ws string, extraEnv, serve []string, mock ...string) []*servedCLI {
	t.Helper()
	env := append([]string{"OPENAI_API_KEY=sk-mock", envLeaseTTL + "=" + e2eLease.String()}, extraEnv...)
	base := mockLLM(t, mock...)
	var nodes []*servedCLI
	for range k {
		args := append([]string{"--model", "openai/mock-model", "--base-url", base + "/v1", "--store", dsn}, serve...)
		nodes = append(nodes, startServe(t, ws, t.TempDir(), env, args...))
	}
	return nodes
}

// clusterRun is a run of a new session on two servers on a fresh
// schema: owner is the node that claimed it.
type clusterRun struct {
	owner, other     *servedCLI
	db               *pgxpool.Pool
	dsn, ws          string
	sessionID, runID string
}

// startClusterRun starts two servers (with env and serve's arguments
// besides the usual ones, and mockllm with mock's) and the run "do it" on
// the first.
func startClusterRun(t *testing.T, env, serve []string, mock ...string) clusterRun {
	t.Helper()
	dsn := pgtest.Start(t).Schema(t)
	ws := t.TempDir()
	nodes := clusterNodesWith(t, 2, dsn, ws, env, serve, mock...)
	db := pgPool(t, dsn)
	var sess struct{ ID string }
	if st := nodes[0].call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 {
		t.Fatalf("create session: %d", st)
	}
	var run struct{ RunID string }
	if st := nodes[0].call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "do it", "idempotencyKey": "k"}, &run); st != 202 {
		t.Fatalf("start run: %d", st)
	}
	owner, oi := ownerOf(t, db, nodes, run.RunID)
	return clusterRun{owner: owner, other: nodes[1-oi], db: db, dsn: dsn, ws: ws, sessionID: sess.ID, runID: run.RunID}
}

// startAskedRun is startClusterRun with --approve ask: the run's one call
// (which appends to started.txt in ws) waits for an approval.
func startAskedRun(t *testing.T) clusterRun {
	t.Helper()
	return startClusterRun(t, nil, []string{"--approve", "ask"}, "-rounds", "1", "-text", "3", "-cmd", "echo start >> started.txt")
}

// waitApprovalRequested returns the approvalId of the first
// approval_requested on st (a stream on the node that does not run it).
func waitApprovalRequested(t *testing.T, st <-chan sseEvent, owner *servedCLI) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-st:
			if id, _ := ev.data["approvalId"].(string); ev.typ == "approval_requested" && id != "" {
				return id
			}
		case <-timeout:
			t.Fatalf("no approval_requested on the other node: %s", owner.stderr)
		}
	}
}

// sigtermHandsOff sends SIGTERM to the run's owner (its drain short), waits
// for it to exit and for the run to succeed on the other node, and returns
// the run's attempt and when the signal went.
func sigtermHandsOff(t *testing.T, cr clusterRun) (attempt int, term time.Time) {
	t.Helper()
	if err := cr.owner.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	term = time.Now()
	select {
	case <-cr.owner.done:
	case <-time.After(8 * time.Second):
		t.Fatalf("the node did not exit within 8 s of SIGTERM (drain 1 s): %s", cr.owner.stderr)
	}
	exited := time.Since(term)
	attempt = waitRunStatus(t, cr.db, cr.runID, "succeeded", 15*time.Second)
	t.Logf("node exited %s after SIGTERM; the run ended on the other node %s after it (attempt %d)",
		exited.Round(time.Millisecond), time.Since(term).Round(time.Millisecond), attempt)
	if attempt != 2 {
		t.Errorf("attempt %d, want 2 (one handoff)", attempt)
	}
	return attempt, term
}

// ownerOf is the node whose process holds run id (the lease owner names
// host/pid/…).
func ownerOf(t *testing.T, db *pgxpool.Pool, nodes []*servedCLI, runID string) (*servedCLI, int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var owner *string
		_ = db.QueryRow(context.Background(), `SELECT owner FROM runs WHERE id = $1`, runID).Scan(&owner)
		if owner != nil {
			parts := strings.Split(*owner, "/")
			if len(parts) >= 2 {
				pid, _ := strconv.Atoi(parts[len(parts)-2])
				for i, n := range nodes {
					if n.cmd.Process.Pid == pid {
						return n, i
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s was not claimed by any node", runID)
	return nil, 0
}

// waitToolStarted waits until the run's tool (mockllm -cmd "echo start
// >> started.txt; …") has started in ws, and returns that file.
func waitToolStarted(t *testing.T, owner *servedCLI, ws string) string {
	t.Helper()
	started := filepath.Join(ws, "started.txt")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			return started
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool never started: %s", owner.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRunStatus waits until run id has status want in the database.
func waitRunStatus(t *testing.T, db *pgxpool.Pool, runID, want string, within time.Duration) (attempt int) {
	t.Helper()
	deadline := time.Now().Add(within)
	var status string
	for time.Now().Before(deadline) {
		_ = db.QueryRow(context.Background(), `SELECT status, attempt FROM runs WHERE id = $1`, runID).Scan(&status, &attempt)
		if status == want {
			return attempt
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s is %q after %s, want %q", runID, status, within, want)
	return 0
}

// untilRunEnd reads a stream until the run_end of runID.
func untilRunEnd(t *testing.T, st <-chan sseEvent, runID string, within time.Duration) []sseEvent {
	t.Helper()
	var got []sseEvent
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-st:
			if !ok {
				t.Fatalf("the stream ended before run_end; got %d events", len(got))
			}
			got = append(got, ev)
			if ev.typ == "run_end" && ev.data["runId"] == runID {
				return got
			}
		case <-timeout:
			t.Fatalf("no run_end within %s; got %d events", within, len(got))
		}
	}
}

// checkTranscript checks each entry is there once, the prompt once, and
// every tool call has exactly one result; it returns the results' texts.
func checkTranscript(t *testing.T, tr *session.Transcript, prompt string) map[string]string {
	t.Helper()
	keys := map[string]bool{}
	ids := map[string]bool{}
	calls := map[string]int{}
	results := map[string]string{}
	prompts := 0
	for _, e := range tr.Entries {
		if ids[e.ID] {
			t.Errorf("entry %s twice", e.ID)
		}
		ids[e.ID] = true
		if e.IdemKey != "" {
			if keys[e.IdemKey] {
				t.Errorf("idempotency key %s twice", e.IdemKey)
			}
			keys[e.IdemKey] = true
		}
		m := e.Message
		if m == nil {
			continue
		}
		switch m.Role {
		case llm.RoleUser:
			if m.Text() == prompt {
				prompts++
			}
		case llm.RoleAssistant:
			for _, c := range m.Content {
				if c.Type == llm.ContentToolCall {
					calls[c.ID]++
				}
			}
		case llm.RoleToolResult:
			if _, dup := results[m.ToolCallID]; dup {
				t.Errorf("call %s has two results", m.ToolCallID)
			}
			results[m.ToolCallID] = m.Text()
		}
	}
	if prompts != 1 {
		t.Errorf("the prompt is in the transcript %d times", prompts)
	}
	for id, n := range calls {
		if _, ok := results[id]; !ok || n != 1 {
			t.Errorf("call %s: %d times, result %v", id, n, ok)
		}
	}
	for id := range results {
		if calls[id] == 0 {
			t.Errorf("a result for call %s that was not made", id)
		}
	}
	return results
}

// kill -9 the node running a run during its tool: another node takes the
// run over after the lease, within 20 s; the tool (which may have changed
// things) is not run again but gets the result saying it was interrupted;
// the transcript has each entry once with its pairing intact; a client on
// a node that did not die saw one contiguous seq to the run's end.
func TestServeClusterKillOwnerDuringTool(t *testing.T) {
	dsn := pgtest.Start(t).Schema(t)
	ws := t.TempDir()
	nodes := clusterNodes(t, 3, dsn, ws, "-rounds", "1", "-text", "3", "-delay", "100ms",
		"-cmd", "echo start >> started.txt; sleep 8")
	db := pgPool(t, dsn)
	var sess struct{ ID string }
	if st := nodes[0].call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 {
		t.Fatalf("create session: %d", st)
	}
	var streams []<-chan sseEvent
	for _, n := range nodes {
		streams = append(streams, n.sessionStream(t, sess.ID))
	}
	var run struct{ RunID string }
	if st := nodes[1].call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "do it", "idempotencyKey": "k"}, &run); st != 202 {
		t.Fatalf("start run: %d", st)
	}
	owner, oi := ownerOf(t, db, nodes, run.RunID)
	started := waitToolStarted(t, owner, ws)
	owner.cmd.Process.Kill()
	<-owner.done
	killed := time.Now()

	attempt := waitRunStatus(t, db, run.RunID, "succeeded", 20*time.Second)
	took := time.Since(killed)
	t.Logf("run %s ended on another node %s after kill -9 of node %d (attempt %d)", run.RunID, took.Round(time.Millisecond), oi, attempt)
	if attempt != 2 {
		t.Errorf("attempt %d, want 2 (one takeover)", attempt)
	}
	if b, _ := os.ReadFile(started); strings.Count(string(b), "start") != 1 {
		t.Errorf("the tool ran %d times, want once: it may have changed things", strings.Count(string(b), "start"))
	}
	tr, err := pgSessions(t, dsn).Load(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	results := checkTranscript(t, tr, "do it")
	if len(results) != 1 {
		t.Fatalf("%d tool results, want 1", len(results))
	}
	for _, text := range results {
		if text != cluster.InterruptedText {
			t.Errorf("the interrupted call's result: %q, want %q", text, cluster.InterruptedText)
		}
	}
	// A client on a node that lived saw one gap-free stream to the end.
	for i, st := range streams {
		if i == oi {
			continue
		}
		got := untilRunEnd(t, st, run.RunID, 10*time.Second)
		starts := 0
		for j, ev := range got {
			if ev.seq != int64(j+1) {
				t.Fatalf("node %d: event %d (%s) has seq %d, want %d", i, j, ev.typ, ev.seq, j+1)
			}
			if ev.typ == "run_start" {
				starts++
			}
		}
		if starts != 2 {
			t.Errorf("node %d saw %d run_start, want 2 (the first attempt and the takeover)", i, starts)
		}
	}
}

// pgPool is a pool on the database at dsn, closed at the test's end.
func pgPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// SIGSTOP the node running a run past its lease, SIGCONT it: another node
// took the run over meanwhile; the paused node's next write is refused,
// it stops its run locally, and the transcript and the events are as the
// new owner left them.
func TestServeClusterPausedOwner(t *testing.T) {
	cr := startClusterRun(t, nil, nil, "-rounds", "1", "-text", "3", "-cmd", "echo start >> started.txt; sleep 3")
	owner, db, dsn, ws := cr.owner, cr.db, cr.dsn, cr.ws
	nodes := []*servedCLI{cr.owner, cr.other}
	sess := struct{ ID string }{cr.sessionID}
	run := struct{ RunID string }{cr.runID}
	waitToolStarted(t, owner, ws)
	if err := owner.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	waitRunStatus(t, db, run.RunID, "succeeded", 20*time.Second)
	t.Logf("the other node ended the run %s after SIGSTOP", time.Since(paused).Round(time.Millisecond))
	st := pgSessions(t, dsn)
	before, err := st.Load(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	var events int
	_ = db.QueryRow(context.Background(), `SELECT count(*) FROM session_events WHERE session_id = $1`, sess.ID).Scan(&events)

	// Its tool's sleep ends while it is stopped: on SIGCONT the paused
	// node's run has a result to write, and that write is refused.
	if err := owner.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(e2eLease + time.Second)
	after, err := st.Load(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Entries) != len(before.Entries) {
		t.Fatalf("the transcript changed after SIGCONT: %d entries, then %d", len(before.Entries), len(after.Entries))
	}
	var eventsAfter int
	_ = db.QueryRow(context.Background(), `SELECT count(*) FROM session_events WHERE session_id = $1`, sess.ID).Scan(&eventsAfter)
	if eventsAfter != events {
		t.Fatalf("events were stored after SIGCONT: %d, then %d", events, eventsAfter)
	}
	checkTranscript(t, after, "do it")
	// Its release was refused too: the run is as the new owner ended it,
	// on either node.
	for i, n := range nodes {
		var r struct{ Status string }
		if code := n.call(t, "GET", "/v1/runs/"+run.RunID, "", nil, &r); code != 200 || r.Status != "succeeded" {
			t.Errorf("GET the run on node %d: %d %q, want succeeded", i, code, r.Status)
		}
	}
	// The paused node lives on and serves: the session's next run runs.
	var next struct{ RunID string }
	if code := owner.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "again", "idempotencyKey": "k2"}, &next); code != 202 {
		t.Fatalf("start a run on the resumed node: %d", code)
	}
	waitRunStatus(t, db, next.RunID, "succeeded", 20*time.Second)
}

// --approve ask on two servers: the approval the run's node asks for is
// answered on the other one, which unblocks the run; a second answer, on
// the run's node, is 409.
func TestServeClusterApprovalOnAnotherNode(t *testing.T) {
	ar := startAskedRun(t)
	owner, other, db, ws := ar.owner, ar.other, ar.db, ar.ws
	sess := struct{ ID string }{ar.sessionID}
	run := struct{ RunID string }{ar.runID}
	apID := waitApprovalRequested(t, other.sessionStream(t, sess.ID), owner)
	if _, err := os.Stat(filepath.Join(ws, "started.txt")); err == nil {
		t.Fatal("the call ran before it was approved")
	}
	if code := other.call(t, "POST", "/v1/approvals/"+apID, "", map[string]any{"decision": "allow_once"}, nil); code != 200 {
		t.Fatalf("answer on the other node: %d", code)
	}
	if code := owner.call(t, "POST", "/v1/approvals/"+apID, "", map[string]any{"decision": "deny"}, nil); code != 409 {
		t.Fatalf("second answer on the run's node: %d, want 409", code)
	}
	waitRunStatus(t, db, run.RunID, "succeeded", 20*time.Second)
	if b, _ := os.ReadFile(filepath.Join(ws, "started.txt")); strings.Count(string(b), "start") != 1 {
		t.Fatalf("the approved call ran %d times", strings.Count(string(b), "start"))
	}
}

// 100 sessions × 2 runs started across three servers at once: every run
// runs once and succeeds, and in each session's stored events one run's
// run_start … run_end never overlaps another's: never two active runs on a
// session, through the whole server.
func TestServeClusterManySessions(t *testing.T) {
	dsn := pgtest.Start(t).Schema(t)
	ws := t.TempDir()
	nodes := clusterNodes(t, 3, dsn, ws, "-rounds", "0", "-text", "2")
	db := pgPool(t, dsn)
	const sessions = 100
	ids := make([]string, sessions)
	for i := range ids {
		var sess struct{ ID string }
		if st := nodes[i%3].call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 {
			t.Fatalf("create session: %d", st)
		}
		ids[i] = sess.ID
	}
	start := time.Now()
	for round := range 2 {
		for i, id := range ids {
			n := nodes[(i+round)%3]
			key := "k" + strconv.Itoa(round)
			if st := n.call(t, "POST", "/v1/sessions/"+id+"/runs", "", map[string]any{"input": "q" + key, "idempotencyKey": key}, nil); st != 202 {
				t.Fatalf("start run: %d", st)
			}
		}
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		var open, done int
		_ = db.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status IN ('queued','running','requires_action')),
			count(*) FILTER (WHERE status = 'succeeded') FROM runs`).Scan(&open, &done)
		if open == 0 {
			if done != 2*sessions {
				var bad []string
				rows, _ := db.Query(context.Background(), `SELECT r.id, r.status, r.attempt, coalesce(e.data::text, '') FROM runs r
					LEFT JOIN session_events e ON e.run_id = r.id AND e.type = 'run_end' WHERE r.status <> 'succeeded'`)
				for rows.Next() {
					var id, st, data string
					var at int
					_ = rows.Scan(&id, &st, &at, &data)
					bad = append(bad, id+" "+st+" attempt "+strconv.Itoa(at)+" "+data)
				}
				rows.Close()
				t.Fatalf("%d runs succeeded, want %d: %s", done, 2*sessions, strings.Join(bad, "\n"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still open after 120 s", open)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d runs on %d sessions across 3 servers in %s", 2*sessions, sessions, time.Since(start).Round(time.Millisecond))
	var attempts int
	_ = db.QueryRow(context.Background(), `SELECT count(*) FROM runs WHERE attempt <> 1`).Scan(&attempts)
	if attempts != 0 {
		t.Errorf("%d runs were claimed more than once", attempts)
	}
	rows, err := db.Query(context.Background(), `SELECT session_id, run_id, type FROM session_events
		WHERE type IN ('run_start', 'run_end') ORDER BY session_id, seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	active := map[string]string{}
	starts := map[string]int{}
	for rows.Next() {
		var sid, rid, typ string
		if err := rows.Scan(&sid, &rid, &typ); err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "run_start":
			if a := active[sid]; a != "" {
				t.Fatalf("session %s: run %s started while run %s was active", sid, rid, a)
			}
			active[sid] = rid
			starts[rid]++
		case "run_end":
			if active[sid] != rid {
				t.Fatalf("session %s: run_end of %s while %q was active", sid, rid, active[sid])
			}
			active[sid] = ""
		}
	}
	if len(starts) != 2*sessions {
		t.Fatalf("%d runs started, want %d", len(starts), 2*sessions)
	}
	for rid, n := range starts {
		if n != 1 {
			t.Fatalf("run %s started %d times", rid, n)
		}
	}
}
