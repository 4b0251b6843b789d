package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/session/pgstore"
	"github.com/agentloop/agentloop/tool"
)

// fastCluster are lease timings short enough for tests on real time.
var fastCluster = cluster.Config{LeaseTTL: 900 * time.Millisecond, Heartbeat: 150 * time.Millisecond,
	SelfFence: 500 * time.Millisecond, Poll: 50 * time.Millisecond}

// clusterServers starts k gateways as nodes of one cluster on a fresh
// schema, each with its own pool and its own faux model playing steps.
func clusterServers(t *testing.T, k int, steps func() []faux.Step, opts ...serverOpt) ([]*testServer, *pgxpool.Pool) {
	t.Helper()
	return clusterServersOn(t, pg.Need(t).Schema(t), t.TempDir(), k, steps, opts...)
}

// clusterServersOn is clusterServers on the schema of dsn, the sessions'
// cwd being cwd.
func clusterServersOn(t *testing.T, dsn, cwd string, k int, steps func() []faux.Step, opts ...serverOpt) ([]*testServer, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	var out []*testServer
	for i := range k {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		st, err := pgstore.New(ctx, pool, &pgstore.Config{Owner: fmt.Sprintf("node-%c", 'a'+i)})
		if err != nil {
			t.Fatal(err)
		}
		cfg := fastCluster
		node, err := cluster.New(ctx, st, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Cleanups run last-in first-out: the gateway (registered by
		// newTestServer) shuts down before its node closes and its pool.
		t.Cleanup(pool.Close)
		t.Cleanup(func() { node.Close() })
		tsv := newTestServer(t, steps(), append(opts, func(c *Config, tsv *testServer) {
			c.Cluster, c.Store, c.StateDir = node, node.SessionStore(), ""
			tsv.runnerConfig.Store = node.SessionStore()
		})...)
		tsv.cwd = cwd
		out = append(out, tsv)
	}
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	return out, admin
}

// notOwner is the node of the two that does not hold run id.
func notOwner(t *testing.T, nodes []*testServer, admin *pgxpool.Pool, runID string) *testServer {
	t.Helper()
	var owner string
	if err := admin.QueryRow(context.Background(), `SELECT owner FROM runs WHERE id = $1`, runID).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if owner == "node-a" {
		return nodes[1]
	}
	return nodes[0]
}

// contiguous fails unless the messages' seqs go up by one from first.
func contiguous(t *testing.T, who string, ms []sseMsg, first int64) {
	t.Helper()
	for i, m := range ms {
		if m.seq() != first+int64(i) {
			t.Fatalf("%s: event %d (%s) has seq %d, want %d; types %v", who, i, m.event, m.seq(), first+int64(i), types(ms))
		}
	}
}

// A run started on one node is claimed by some node; clients on every
// node see the same events with one gap-free seq from the database, and
// a second run of the session continues that numbering.
func TestClusterOneStreamAcrossNodes(t *testing.T) {
	steps := func() []faux.Step {
		return []faux.Step{faux.Call("", "echo", map[string]any{"text": "hi"}), faux.Say("done"), faux.Say("again")}
	}
	nodes, admin := clusterServers(t, 2, steps)
	a, b := nodes[0], nodes[1]
	sess := a.newSession()
	// The session was made on a: b knows it from the database.
	sa := a.events("/v1/sessions/"+sess.ID+"/events?after=0", nil)
	sb := b.events("/v1/sessions/"+sess.ID+"/events?after=0", nil)
	info, code := b.startRun(sess.ID, "hello", "k1", "")
	if code != http.StatusAccepted {
		t.Fatalf("start run on b: %d", code)
	}
	// The same key on the other node is the same run.
	if again, code := a.startRun(sess.ID, "hello", "k1", ""); code != http.StatusAccepted || again.RunID != info.RunID {
		t.Fatalf("the same idempotency key on a: %d %+v, want run %s", code, again, info.RunID)
	}
	untilIdle := func(st *sseStream) []sseMsg {
		var got []sseMsg
		for {
			ms := st.until(t, EventSessionStatus)
			got = append(got, ms...)
			if ms[len(ms)-1].fields(t)["status"] == StatusIdle {
				return got
			}
		}
	}
	ga, gb := untilIdle(sa), untilIdle(sb)
	contiguous(t, "node a", ga, 1)
	contiguous(t, "node b", gb, 1)
	if len(ga) != len(gb) {
		t.Fatalf("node a saw %d events, node b %d: %v / %v", len(ga), len(gb), types(ga), types(gb))
	}
	for i := range ga {
		if ga[i].data != gb[i].data {
			t.Fatalf("event %d differs between the nodes:\n%s\n%s", i, ga[i].data, gb[i].data)
		}
	}
	want := []string{"tool_execution_end", "run_end"}
	for _, w := range want {
		found := false
		for _, m := range ga {
			found = found || m.event == w
		}
		if !found {
			t.Fatalf("no %s event: %v", w, types(ga))
		}
	}
	// The owner releases the run just after its last event (the idle
	// status) is stored.
	var status, owner string
	for deadline := time.Now().Add(10 * time.Second); status != RunSucceeded && time.Now().Before(deadline); {
		if err := admin.QueryRow(context.Background(), `SELECT status, owner FROM runs WHERE id = $1`, info.RunID).Scan(&status, &owner); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status != RunSucceeded {
		t.Fatalf("run %s is %s in the database, want %s", info.RunID, status, RunSucceeded)
	}
	t.Logf("run %s ran on %s; %d events", info.RunID, owner, len(ga))

	// A second run, started on a: the numbering continues on both nodes.
	last := ga[len(ga)-1].seq()
	if _, code := a.startRun(sess.ID, "more", "k2", ""); code != http.StatusAccepted {
		t.Fatalf("start run on a: %d", code)
	}
	ga2, gb2 := untilIdle(sa), untilIdle(sb)
	contiguous(t, "node a, second run", ga2, last+1)
	contiguous(t, "node b, second run", gb2, last+1)

	// The transcript has both prompts once.
	tr, err := a.s.cfg.Store.Load(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	prompts := 0
	for _, e := range tr.Entries {
		if e.Message != nil && e.Message.Role == "user" {
			prompts++
		}
	}
	if prompts != 2 {
		t.Fatalf("the transcript has %d user messages, want 2", prompts)
	}
}

// An approval asked on the node that holds the run is listed and answered
// on another; the first answer unblocks the run, the next one, on a third
// node, gets 409.
func TestClusterApprovalAcrossNodes(t *testing.T) {
	steps := func() []faux.Step {
		return []faux.Step{faux.Call("", "echo", map[string]any{"text": "hi"}), faux.Say("done")}
	}
	nodes, admin := clusterServers(t, 3, steps, askEverything)
	sess := nodes[0].newSession()
	st := nodes[1].events("/v1/sessions/"+sess.ID+"/events?after=0", nil)
	info, code := nodes[0].startRun(sess.ID, "go", "k", "")
	if code != http.StatusAccepted {
		t.Fatalf("start run: %d", code)
	}
	got := st.until(t, EventApprovalRequested)
	apID, _ := got[len(got)-1].fields(t)["approvalId"].(string)
	var owner string
	if err := admin.QueryRow(context.Background(), `SELECT owner FROM runs WHERE id = $1`, info.RunID).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	// Answer on a node that does not hold the run, and 409 on another.
	var others []*testServer
	for i, n := range nodes {
		if fmt.Sprintf("node-%c", 'a'+i) != owner {
			others = append(others, n)
		}
	}
	var pend struct{ Pending []PendingAction }
	others[0].do("GET", "/v1/runs/"+info.RunID+"/pending", nil, &pend)
	if len(pend.Pending) != 1 || pend.Pending[0].ID != apID || pend.Pending[0].ToolName != "echo" {
		t.Fatalf("pending on a node that does not hold the run: %+v", pend)
	}
	if code := others[0].do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionAllowOnce}, nil); code != http.StatusOK {
		t.Fatalf("first answer: %d", code)
	}
	if code := others[1].do("POST", "/v1/approvals/"+apID, ApprovalAnswer{Decision: DecisionDeny}, nil); code != http.StatusConflict {
		t.Fatalf("second answer on another node: %d, want 409", code)
	}
	rest := st.until(t, "run_end")
	all := append(got, rest...)
	contiguous(t, "follower", all, 1)
	var resolved, ran bool
	for _, m := range rest {
		f := m.fields(t)
		if m.event == EventApprovalResolved && f["decision"] == DecisionAllowOnce && f["by"] == "client" {
			resolved = true
		}
		if m.event == "tool_execution_end" && f["isError"] != true {
			ran = true
		}
	}
	if !resolved || !ran {
		t.Fatalf("after the answer: resolved %v, the call ran %v: %v", resolved, ran, types(rest))
	}
	t.Logf("run held by %s, answered on another node", owner)
}

// An abort sent to any node reaches the node that holds the run; the
// run ends aborted and its session is free for the next run.
func TestClusterAbortFromAnotherNode(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	steps := func() []faux.Step { return []faux.Step{held(release, "never"), faux.Say("next")} }
	nodes, admin := clusterServers(t, 2, steps)
	sess := nodes[0].newSession()
	st := nodes[0].events("/v1/sessions/"+sess.ID+"/events?after=0", nil)
	info, _ := nodes[0].startRun(sess.ID, "go", "k", "")
	st.until(t, "run_start")
	other := notOwner(t, nodes, admin, info.RunID)
	if code := other.do("POST", "/v1/runs/"+info.RunID+"/abort", nil, nil); code != http.StatusOK && code != http.StatusAccepted {
		t.Fatalf("abort on the other node: %d", code)
	}
	end := st.until(t, "run_end")
	if r := end[len(end)-1].fields(t)["reason"]; r != "aborted" {
		t.Fatalf("run_end reason %v, want aborted", r)
	}
	var status string
	deadline := time.Now().Add(10 * time.Second)
	for status != RunAborted && time.Now().Before(deadline) {
		_ = admin.QueryRow(context.Background(), `SELECT status FROM runs WHERE id = $1`, info.RunID).Scan(&status)
		time.Sleep(20 * time.Millisecond)
	}
	if status != RunAborted {
		t.Fatalf("run status in the database: %s, want aborted", status)
	}
	if code := other.do("POST", "/v1/runs/"+info.RunID+"/abort", nil, nil); code != http.StatusConflict {
		t.Fatalf("abort of an ended run: %d, want 409", code)
	}
}

type lookTool struct{ tool.Tool }

func (lookTool) ReadOnly() bool { return true }

// A node died in the middle of a tool batch (simulated: a node that
// claimed the run, wrote what a run writes, and closed without releasing).
// The gateway node that takes the run over resumes from the transcript
// without saying the prompt again; the call marked started gets the
// interrupted result, the read-only one is run again, the reply that was
// streaming is withdrawn with retry_reset, and the run ends on the new
// node.
func TestClusterTakeoverResumes(t *testing.T) {
	dsn := pg.Need(t).Schema(t)
	cwd := t.TempDir()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := pgstore.New(ctx, pool, &pgstore.Config{Owner: "node-dead"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fastCluster
	dead, err := cluster.New(ctx, st, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	sid := session.NewSessionID()
	payload, _ := json.Marshal(clusterInput{Input: json.RawMessage(`"go"`), Cwd: cwd})
	runID, _, err := dead.Enqueue(ctx, cluster.EnqueueOptions{SessionID: sid, Cwd: cwd, Input: payload})
	if err != nil {
		t.Fatal(err)
	}
	c, err := dead.Claim(ctx)
	if err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	if err := dead.SetBase(ctx, c, 0); err != nil {
		t.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write := llm.Content{Type: llm.ContentToolCall, ID: "call_w", Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}
	look := llm.Content{Type: llm.ContentToolCall, ID: "call_l", Name: "look", Arguments: json.RawMessage(`{}`)}
	for _, e := range []session.Entry{
		session.MessageEntry(llm.UserText("go")),
		session.MessageEntry(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{write, look}, StopReason: llm.StopReasonToolUse, Timestamp: 1}),
		cluster.ToolStarted(runID, 1, write),
	} {
		if _, err := sess.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	sess.Close()
	// The next reply had begun streaming when the node died.
	if _, err := dead.AppendEvent(ctx, c, "message_start", json.RawMessage(`{"v":2,"type":"message_start","seq":1}`)); err != nil {
		t.Fatal(err)
	}
	dead.Close() // its lease is left to lapse, as a kill leaves it

	looked := 0
	withLook := func(c *Config, tsv *testServer) {
		c.Prepare = func(ctx context.Context, rs RunSettings) (runner.Request, error) {
			lt := lookTool{tool.New("look", "look", func(ctx context.Context, _ struct{}, _ func(tool.Partial)) (tool.Result, error) {
				looked++
				return tool.TextResult("looked"), nil
			})}
			reg, err := tool.NewRegistry(echoTool(), lt)
			if err != nil {
				return runner.Request{}, err
			}
			return runner.Request{Model: tsv.model, Info: tsv.model.ModelInfo(), Tools: reg}, nil
		}
	}
	nodes, admin := clusterServersOn(t, dsn, cwd, 1, func() []faux.Step { return []faux.Step{faux.Say("after takeover")} }, withLook)
	stream := nodes[0].events("/v1/sessions/"+sid+"/events?after=0", nil)
	got := stream.until(t, "run_end")
	contiguous(t, "new owner", got, 1)
	if got[1].event != "retry_reset" || got[1].fields(t)["reason"] != "takeover" {
		t.Fatalf("after the dead node's open message: %v", types(got))
	}
	var status string
	var attempt int
	deadline := time.Now().Add(10 * time.Second)
	for status != RunSucceeded && time.Now().Before(deadline) {
		_ = admin.QueryRow(ctx, `SELECT status, attempt FROM runs WHERE id = $1`, runID).Scan(&status, &attempt)
		time.Sleep(20 * time.Millisecond)
	}
	if status != RunSucceeded || attempt != 2 {
		t.Fatalf("run %s: %s at attempt %d, want succeeded at 2", runID, status, attempt)
	}
	tr, err := st.Load(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	prompts, replies := 0, 0
	for _, e := range tr.Path(tr.Leaf) {
		m := e.Message
		if m == nil {
			continue
		}
		switch m.Role {
		case llm.RoleUser:
			prompts++
		case llm.RoleToolResult:
			if _, dup := results[m.ToolCallID]; dup {
				t.Fatalf("call %s answered twice", m.ToolCallID)
			}
			results[m.ToolCallID] = m.Text()
		case llm.RoleAssistant:
			if m.Text() == "after takeover" {
				replies++
			}
		}
	}
	if prompts != 1 || replies != 1 || looked != 1 || results["call_w"] != cluster.InterruptedText || results["call_l"] != "looked" {
		t.Fatalf("prompts %d, replies %d, look ran %d times, results %v", prompts, replies, looked, results)
	}
}

// A WebSocket client that subscribes on a node that does not hold the
// run, after the run asked for an approval, is asked (approval/request)
// as it would be on the run's node, and its answer there unblocks the run.
func TestClusterPendingApprovalToLateWSClient(t *testing.T) {
	steps := func() []faux.Step {
		return []faux.Step{faux.Call("", "echo", map[string]any{"text": "hi"}), faux.Say("done")}
	}
	nodes, admin := clusterServers(t, 2, steps, askEverything)
	sess := nodes[0].newSession()
	info, code := nodes[0].startRun(sess.ID, "go", "k", "")
	if code != http.StatusAccepted {
		t.Fatalf("start run: %d", code)
	}
	var owner string
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		_ = admin.QueryRow(context.Background(), `SELECT count(*) FROM session_events WHERE run_id = $1 AND type = $2`,
			info.RunID, EventApprovalRequested).Scan(&n)
		_ = admin.QueryRow(context.Background(), `SELECT coalesce(owner, '') FROM runs WHERE id = $1`, info.RunID).Scan(&owner)
		if n == 1 && owner != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run asked for no approval")
		}
		time.Sleep(10 * time.Millisecond)
	}
	other := nodes[0]
	if owner == "node-a" {
		other = nodes[1]
	}
	c, _ := other.dialWS("", nil)
	c.result("events/subscribe", map[string]any{"sessionId": sess.ID}, nil)
	var req rpcMessage
	for req = c.next(); req.Method != "approval/request"; req = c.next() {
	}
	var a approvalFields
	json.Unmarshal(req.Params, &a)
	if a.RunID != info.RunID || a.ToolName != "echo" {
		t.Fatalf("approval/request: %s", req.Params)
	}
	c.answer(req.ID, map[string]any{"decision": "allow_once"})
	if run := other.waitRunEnd(info.RunID); run.Status != RunSucceeded {
		t.Fatalf("the run after the answer on the other node: %+v", run)
	}
}

// Steer and follow-up messages sent from another node are bounded as a
// local one is (Config.InjectQueue, counted across the nodes): beyond,
// 429 queue_full; once the run has read them there is room again.
func TestClusterInjectQueueBound(t *testing.T) {
	first, second := make(chan struct{}), make(chan struct{})
	steps := func() []faux.Step {
		return []faux.Step{held(first, "first"), held(second, "second"), faux.Say("third")}
	}
	nodes, admin := clusterServers(t, 2, steps, func(c *Config, _ *testServer) { c.InjectQueue = 2 })
	sess := nodes[0].newSession()
	st := nodes[0].events("/v1/sessions/"+sess.ID+"/events?after=0", nil)
	info, _ := nodes[0].startRun(sess.ID, "go", "k", "")
	st.until(t, "message_update") // the held first reply streams
	other := notOwner(t, nodes, admin, info.RunID)
	for i, path := range []string{"steer", "follow-up"} {
		var inj Injected
		if code := other.do("POST", "/v1/runs/"+info.RunID+"/"+path, Inject{Text: "m" + strconv.Itoa(i)}, &inj); code != http.StatusOK {
			t.Fatalf("%s %d on the other node: %d %+v", path, i, code, inj)
		}
	}
	checkInjectFull(t, other, info.RunID, 2)
	// Both reached the owner before its reply ends.
	for delivered := 0; delivered < 2; time.Sleep(20 * time.Millisecond) {
		if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM run_commands WHERE run_id = $1 AND consumed_at IS NOT NULL`,
			info.RunID).Scan(&delivered); err != nil {
			t.Fatal(err)
		}
	}
	close(first)
	// The run reads the steered message at its next turn; the follow-up
	// keeps its place until the run would stop.
	for n := 0; n < 1; {
		ms := st.until(t, "message_start")
		if m := ms[len(ms)-1].fields(t); m["message"].(map[string]any)["role"] == "user" {
			n++
		}
	}
	st.until(t, "message_update") // the held second reply streams
	var inj Injected
	deadline := time.Now().Add(10 * time.Second)
	code := 0
	for code != http.StatusOK && time.Now().Before(deadline) {
		// The read is recorded just after the message_start went out.
		if code = other.do("POST", "/v1/runs/"+info.RunID+"/steer", Inject{Text: "again"}, &inj); code != http.StatusOK {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if code != http.StatusOK {
		t.Fatalf("steer after the run read the first one: %d %+v", code, inj)
	}
	var e wireError
	if code := other.do("POST", "/v1/runs/"+info.RunID+"/steer", Inject{Text: "full again"}, &e); code != http.StatusTooManyRequests {
		t.Fatalf("steer beyond the bound again: %d %+v", code, e)
	}
	close(second)
	st.until(t, "run_end")
}
