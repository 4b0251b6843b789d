package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/session/pgstore"
)

// fast are timings short enough for tests on real time, in the default
// proportions.
var fast = Config{LeaseTTL: 900 * time.Millisecond, Heartbeat: 150 * time.Millisecond, SelfFence: 500 * time.Millisecond, Poll: 50 * time.Millisecond}

// nodes starts k nodes on one fresh schema, each with its own pool.
func nodes(t *testing.T, k int, cfg Config) ([]*Node, *pgxpool.Pool) {
	t.Helper()
	dsn := pg.Need(t).Schema(t)
	ctx := context.Background()
	var out []*Node
	for i := range k {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		st, err := pgstore.New(ctx, pool, &pgstore.Config{Owner: fmt.Sprintf("node-%c", 'a'+i)})
		if err != nil {
			t.Fatal(err)
		}
		n, err := New(ctx, st, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		out = append(out, n)
	}
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	return out, admin
}

func userMsg(text string) session.Entry {
	return session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}, Timestamp: 1})
}

func waitClaim(t *testing.T, n *Node, within time.Duration) *Claim {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	c, err := n.WaitClaim(ctx)
	if err != nil {
		t.Fatalf("%s: no claim within %s: %v", n.ID(), within, err)
	}
	return c
}

// 100 sessions with two runs each, three nodes claiming with two workers
// each: no session ever has two runs held at once, every run is run once,
// and the database itself refuses a second active run.
func TestClaimOneActiveRunPerSession(t *testing.T) {
	ns, admin := nodes(t, 3, fast)
	ctx := context.Background()
	const sessions, perSession = 100, 2
	for r := range perSession {
		for s := range sessions {
			if _, _, err := ns[s%3].Enqueue(ctx, EnqueueOptions{SessionID: fmt.Sprintf("s%03d", s), Cwd: "/c",
				IdemKey: fmt.Sprintf("s%03d/%d", s, r)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, created, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "s000", IdemKey: "s000/0"}); err != nil || created {
		t.Fatalf("a repeated enqueue queued again: created %v, %v", created, err)
	}
	var mu sync.Mutex
	active := map[string]string{}
	ran := map[string]int{}
	var done atomic.Int64
	var wg sync.WaitGroup
	for _, n := range ns {
		for range 2 {
			wg.Go(func() {
				for done.Load() < sessions*perSession {
					c, err := n.Claim(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if c == nil {
						time.Sleep(time.Millisecond)
						continue
					}
					mu.Lock()
					if other, busy := active[c.Run.SessionID]; busy {
						t.Errorf("session %s: run %s claimed by %s while %s is active", c.Run.SessionID, c.Run.ID, n.ID(), other)
					}
					active[c.Run.SessionID] = c.Run.ID
					ran[c.Run.ID]++
					mu.Unlock()
					time.Sleep(time.Duration(len(c.Run.ID)%3) * time.Millisecond)
					mu.Lock()
					delete(active, c.Run.SessionID)
					mu.Unlock()
					if err := n.Release(ctx, c, "completed", nil); err != nil {
						t.Error(err)
						return
					}
					done.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if len(ran) != sessions*perSession {
		t.Errorf("%d runs ran, want %d", len(ran), sessions*perSession)
	}
	for id, k := range ran {
		if k != 1 {
			t.Errorf("run %s ran %d times", id, k)
		}
	}
	var completed int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM runs WHERE status = 'completed' AND attempt = 1`).Scan(&completed); err != nil || completed != sessions*perSession {
		t.Errorf("%d runs completed at their first attempt (%v)", completed, err)
	}
	// The partial unique index is the last word, whatever a node does.
	_, err := admin.Exec(ctx, `UPDATE runs SET status = 'running' WHERE session_id = 's000'`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.ConstraintName != "one_active_run" {
		t.Errorf("two active runs in one session: %v, want a one_active_run violation", err)
	}
}

// A node whose heartbeats stop (paused, cut off from the database) stops
// its run itself after SelfFence; another node takes the run over once
// the lease expired; the paused node's next append, event and release
// are refused with ErrFenced and write nothing; a follower on a third
// node sees one gap-free event stream across the two owners.
func TestPausedNodeIsFenced(t *testing.T) {
	ns, _ := nodes(t, 3, fast)
	a, b, c := ns[0], ns[1], ns[2]
	ctx := context.Background()
	runID, _, err := a.Enqueue(ctx, EnqueueOptions{SessionID: "paused", Cwd: "/p", Input: json.RawMessage(`{"prompt":"go"}`)})
	if err != nil {
		t.Fatal(err)
	}
	ca := waitClaim(t, a, 5*time.Second)
	if ca.Run.ID != runID || ca.Run.Attempt != 1 {
		t.Fatalf("claimed %+v", ca.Run)
	}
	sa, err := ca.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Append(ctx, userMsg("go")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := a.AppendEvent(ctx, ca, "message_update", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	paused := time.Now()
	a.holdRenewals.Store(true)
	select {
	case <-ca.Context().Done():
		if !errors.Is(context.Cause(ca.Context()), ErrSelfFenced) {
			t.Errorf("cause %v, want ErrSelfFenced", context.Cause(ca.Context()))
		}
		d := time.Since(paused)
		if d >= fast.LeaseTTL {
			t.Errorf("self-fenced after %s, not before the lease (%s) could expire", d, fast.LeaseTTL)
		}
		t.Logf("self-fenced %s after the last renewal could start (SelfFence %s)", d.Round(time.Millisecond), fast.SelfFence)
	case <-time.After(5 * time.Second):
		t.Fatal("the paused node did not stop its run")
	}
	cb := waitClaim(t, b, 5*time.Second)
	if cb.Run.ID != runID || cb.Run.Attempt != 2 || cb.Epoch <= ca.Epoch {
		t.Fatalf("takeover claim %+v epoch %d (was %d)", cb.Run, cb.Epoch, ca.Epoch)
	}
	// The lease ran until LeaseTTL after the last renewal began (the
	// database's now() of the renewal is no earlier); under load that
	// renewal may have come well before the pause, so measure from it.
	lastRenewal := time.Unix(0, ca.renewed.Load())
	if d := time.Since(lastRenewal); d < fast.LeaseTTL {
		t.Errorf("taken over %s after the last renewal began, before the lease (%s) could have expired", d, fast.LeaseTTL)
	} else {
		t.Logf("taken over %s after the pause (LeaseTTL %s, Poll %s)", d.Round(time.Millisecond), fast.LeaseTTL, fast.Poll)
	}
	sb, err := cb.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sb.Transcript().Entries); got != 1 {
		t.Fatalf("the new owner loaded %d entries, want 1", got)
	}
	if _, err := sb.Append(ctx, userMsg("b continues")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := b.AppendEvent(ctx, cb, "message_update", json.RawMessage(fmt.Sprintf(`{"i":%d}`, 3+i))); err != nil {
			t.Fatal(err)
		}
	}
	// The paused node wakes and, ignoring its context, tries to write.
	if _, err := sa.Append(ctx, userMsg("late")); !errors.Is(err, ErrFenced) {
		t.Errorf("late append: %v, want ErrFenced", err)
	}
	if _, err := a.AppendEvent(ctx, ca, "message_update", nil); !errors.Is(err, ErrFenced) {
		t.Errorf("late event: %v, want ErrFenced", err)
	}
	if err := a.Release(ctx, ca, "completed", nil); !errors.Is(err, ErrFenced) {
		t.Errorf("late release: %v, want ErrFenced", err)
	}
	tr, err := b.Store().Load(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 || tr.Entries[1].Message.Text() != "b continues" {
		t.Errorf("transcript after the fenced writes: %d entries", len(tr.Entries))
	}
	evs, err := c.WaitEvents(ctx, "paused", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the stream has a gap", i, e.Seq)
		}
	}
	if len(evs) != 6 || evs[2].RunID != runID || evs[5].RunID != runID {
		t.Errorf("%d events, want 6", len(evs))
	}
	if err := b.Release(ctx, cb, "completed", nil); err != nil {
		t.Fatal(err)
	}
}

// A follower waiting on one node is woken by an event stored on another.
func TestWaitEventsWokenAcrossNodes(t *testing.T) {
	cfg := fast
	cfg.Poll = 10 * time.Second // only NOTIFY can wake the follower in time
	ns, _ := nodes(t, 2, cfg)
	ctx := context.Background()
	if _, _, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "tail", Cwd: "/t"}); err != nil {
		t.Fatal(err)
	}
	c, err := ns[0].Claim(ctx)
	if err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	got := make(chan []Event, 1)
	go func() {
		evs, _ := ns[1].WaitEvents(ctx, "tail", 0)
		got <- evs
	}()
	time.Sleep(100 * time.Millisecond) // let the follower start waiting
	start := time.Now()
	if _, err := ns[0].AppendEvent(ctx, c, "agent_start", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-got:
		if len(evs) != 1 || evs[0].Seq != 1 {
			t.Errorf("events %+v", evs)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("woken after %s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follower was not woken by NOTIFY")
	}
	ns[0].Release(ctx, c, "completed", nil)
}

// A node dies mid-tool (closed without releasing, as kill -9 leaves it):
// another node claims the run once the lease expired, and the call that
// was running gets exactly one "interrupted" result, even when the
// takeover happens twice; a read-only call is handed back to run again.
func TestTakeoverInDoubtTool(t *testing.T) {
	ns, _ := nodes(t, 3, fast)
	ctx := context.Background()
	if _, _, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "doubt", Cwd: "/d"}); err != nil {
		t.Fatal(err)
	}
	ca := waitClaim(t, ns[0], 5*time.Second)
	sa, err := ca.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write := llm.ToolCall("call-w", "write", json.RawMessage(`{"path":"x"}`))
	read := llm.ToolCall("call-r", "read", json.RawMessage(`{"path":"y"}`))
	entries := []session.Entry{
		userMsg("change x, read y"),
		session.MessageEntry(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{write, read}, StopReason: llm.StopReasonToolUse, Timestamp: 2}),
		ToolStarted(ca.Run.ID, 1, write),
		ToolStarted(ca.Run.ID, 1, read),
	}
	for _, e := range entries {
		if _, err := sa.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	died := time.Now()
	ns[0].Close() // no release: the lease is left to expire
	readOnly := func(name string) bool { return name == "read" }
	for i, n := range ns[1:] {
		c := waitClaim(t, n, 5*time.Second)
		if d := time.Since(died); i == 0 {
			if d > fast.LeaseTTL+fast.Heartbeat+fast.Poll+time.Second {
				t.Errorf("taken over after %s", d)
			}
			t.Logf("a dead node's run claimed %s after it died", d.Round(time.Millisecond))
		}
		s, err := c.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ResolveInDoubt(ctx, s, readOnly)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && (len(again) != 1 || again[0].CallID != "call-r") {
			t.Errorf("calls to run again: %+v, want the read", again)
		}
		if i == 1 {
			break
		}
		n.Close() // the second owner dies too, before running the read
	}
	tr, err := ns[2].Store().Load(ctx, "doubt")
	if err != nil {
		t.Fatal(err)
	}
	var interrupted int
	for _, e := range tr.Entries {
		if m := e.Message; m != nil && m.Role == llm.RoleToolResult {
			if m.ToolCallID != "call-w" || !m.IsError || m.Text() != InterruptedText {
				t.Errorf("unexpected result %+v", m)
			}
			interrupted++
		}
	}
	if interrupted != 1 {
		t.Errorf("%d interrupted results, want 1", interrupted)
	}
	if got := InDoubt(tr); len(got) != 1 || got[0].CallID != "call-r" {
		t.Errorf("still in doubt: %+v, want only the read", got)
	}
}

// An approval asked on one node is answered on another and delivered to
// the owner; a second answer is refused; steer and abort sent from a
// third node reach the owner's run.
func TestCommandsAndApprovalsAcrossNodes(t *testing.T) {
	cfg := fast
	cfg.Heartbeat = 5 * time.Second // delivery must come from NOTIFY, not the heartbeat
	cfg.LeaseTTL, cfg.SelfFence = 20*time.Second, 10*time.Second
	ns, admin := nodes(t, 3, cfg)
	a, b, c := ns[0], ns[1], ns[2]
	ctx := context.Background()
	runID, _, err := c.Enqueue(ctx, EnqueueOptions{SessionID: "approve", Cwd: "/a"})
	if err != nil {
		t.Fatal(err)
	}
	ca := waitClaim(t, a, 5*time.Second)
	if err := a.RequestAction(ctx, ca, "act-1", json.RawMessage(`{"tool":"bash","command":"rm -rf build"}`)); err != nil {
		t.Fatal(err)
	}
	pend, err := c.PendingActions(ctx, runID)
	if err != nil || len(pend) != 1 || pend[0].ID != "act-1" {
		t.Fatalf("pending %+v %v", pend, err)
	}
	if got, err := b.Resolve(ctx, "act-1", json.RawMessage(`{"allow":true}`)); err != nil || got != runID {
		t.Fatalf("resolve: %s %v", got, err)
	}
	if _, err := c.Resolve(ctx, "act-1", json.RawMessage(`{"allow":false}`)); !errors.Is(err, ErrAlreadyResolved) {
		t.Errorf("second answer: %v, want ErrAlreadyResolved", err)
	}
	if _, err := c.Resolve(ctx, "no-such", nil); !errors.Is(err, ErrNoAction) {
		t.Errorf("unknown action: %v", err)
	}
	next := func() Command {
		t.Helper()
		select {
		case cmd := <-ca.Commands():
			return cmd
		case <-time.After(3 * time.Second):
			t.Fatal("no command reached the owner")
			return Command{}
		}
	}
	cmd := next()
	var ap ApprovalPayload
	if cmd.Kind != CommandApproval || json.Unmarshal(cmd.Payload, &ap) != nil || ap.ActionID != "act-1" || string(ap.Decision) != `{"allow":true}` {
		t.Errorf("approval command %+v", cmd)
	}
	var status string
	if err := admin.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1`, runID).Scan(&status); err != nil || status != StatusRunning {
		t.Errorf("status after the answer %q %v", status, err)
	}
	if err := c.Send(ctx, runID, CommandSteer, json.RawMessage(`{"text":"also check y"}`)); err != nil {
		t.Fatal(err)
	}
	if cmd := next(); cmd.Kind != CommandSteer || string(cmd.Payload) != `{"text":"also check y"}` {
		t.Errorf("steer %+v", cmd)
	}
	if err := b.Send(ctx, runID, CommandAbort, nil); err != nil {
		t.Fatal(err)
	}
	if cmd := next(); cmd.Kind != CommandAbort {
		t.Errorf("abort %+v", cmd)
	}
	select {
	case <-ca.Context().Done():
		if !errors.Is(context.Cause(ca.Context()), ErrAbortRequested) {
			t.Errorf("cause %v", context.Cause(ca.Context()))
		}
	case <-time.After(3 * time.Second):
		t.Fatal("abort did not cancel the run")
	}
	if err := a.Release(ctx, ca, "aborted", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, runID, CommandSteer, nil); !errors.Is(err, ErrRunEnded) {
		t.Errorf("steer after the end: %v, want ErrRunEnded", err)
	}
}

// PostgreSQL restarts under a running run: writes fail visibly (not as
// fenced) while it is down, the node keeps its lease when the outage is
// shorter than SelfFence, and once it is back the run continues: the
// retried writes are stored once and the event stream has no gap.
func TestPostgresRestartMidRun(t *testing.T) {
	srv := pg.Need(t)
	cfg := Config{LeaseTTL: 8 * time.Second, Heartbeat: 200 * time.Millisecond, SelfFence: 6 * time.Second, Poll: 50 * time.Millisecond}
	ns, _ := nodes(t, 2, cfg)
	a, b := ns[0], ns[1]
	ctx := context.Background()
	if _, _, err := a.Enqueue(ctx, EnqueueOptions{SessionID: "restart", Cwd: "/r"}); err != nil {
		t.Fatal(err)
	}
	ca := waitClaim(t, a, 5*time.Second)
	sa, err := ca.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Append(ctx, userMsg("go")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AppendEvent(ctx, ca, "agent_start", nil); err != nil {
		t.Fatal(err)
	}
	srv.Crash(t)
	result := session.MessageEntry(llm.Message{Role: llm.RoleToolResult, ToolCallID: "c1", ToolName: "read",
		Content: []llm.Content{llm.Text("ok")}, Timestamp: 3})
	result.IdemKey = "run/1/c1/result"
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err1 := sa.Append(dctx, result)
	_, err2 := a.AppendEvent(dctx, ca, "tool_execution_end", nil)
	cancel()
	for _, err := range []error{err1, err2} {
		if err == nil || errors.Is(err, ErrFenced) {
			t.Fatalf("write with the database down: %v, want a connection error", err)
		}
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the caller retries; the key keeps it to one entry
		if _, err := sa.Append(ctx, result); err != nil {
			t.Fatalf("append %d after the restart: %v", i, err)
		}
	}
	if _, err := a.AppendEvent(ctx, ca, "tool_execution_end", nil); err != nil {
		t.Fatal(err)
	}
	if ca.Context().Err() != nil {
		t.Fatalf("the run was stopped by an outage shorter than SelfFence: %v", context.Cause(ca.Context()))
	}
	if c, err := b.Claim(ctx); c != nil || err != nil {
		t.Fatalf("another node claimed a run whose owner is alive: %+v %v", c, err)
	}
	tr, err := b.Store().Load(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 {
		t.Errorf("%d entries after the restart, want 2", len(tr.Entries))
	}
	evs, err := b.Events(ctx, "restart", 0, 0)
	if err != nil || len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
		t.Errorf("events %+v %v", evs, err)
	}
	if err := a.Release(ctx, ca, "completed", nil); err != nil {
		t.Fatal(err)
	}
}

// A heartbeat renews the leases of claims only: a session the same store
// opened for itself (a lease without expiry, like the file lock) keeps
// no expiry, so it cannot lapse when the node's claims end.
func TestHeartbeatLeavesOpenSessionsAlone(t *testing.T) {
	ns, admin := nodes(t, 1, fast)
	n := ns[0]
	ctx := context.Background()
	s, err := n.Store().Create(ctx, session.CreateOptions{ID: "mine", Cwd: "/m"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, userMsg("hi")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Enqueue(ctx, EnqueueOptions{SessionID: "other", Cwd: "/o"}); err != nil {
		t.Fatal(err)
	}
	c := waitClaim(t, n, 5*time.Second)
	time.Sleep(3 * fast.Heartbeat)
	var expires *time.Time
	if err := admin.QueryRow(ctx, `SELECT lease_expires FROM sessions WHERE id = 'mine'`).Scan(&expires); err != nil {
		t.Fatal(err)
	}
	if expires != nil {
		t.Errorf("the heartbeat gave the open session's lease an expiry: %v", expires)
	}
	if c.Context().Err() != nil {
		t.Fatalf("the claim was stopped: %v", context.Cause(c.Context()))
	}
	n.Release(ctx, c, "completed", nil)
}

// An idempotency key names a run of its session: two sessions (two
// clients) that happen to use the same key each get their own run, and
// neither is handed the other's run id.
func TestIdemKeyIsPerSession(t *testing.T) {
	ns, admin := nodes(t, 1, fast)
	ctx := context.Background()
	a, createdA, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "idem-a", Cwd: "/a", IdemKey: "k1"})
	if err != nil || !createdA {
		t.Fatalf("a: %v %v", createdA, err)
	}
	b, createdB, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "idem-b", Cwd: "/b", IdemKey: "k1"})
	if err != nil || !createdB || b == a {
		t.Fatalf("b with a's key: run %s (a's %s), created %v, %v", b, a, createdB, err)
	}
	var sess string
	if err := admin.QueryRow(ctx, `SELECT session_id FROM runs WHERE id = $1`, b).Scan(&sess); err != nil || sess != "idem-b" {
		t.Fatalf("b's run is in %q: %v", sess, err)
	}
	// The same key on the same session is still the same run.
	again, created, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "idem-b", Cwd: "/b", IdemKey: "k1"})
	if err != nil || created || again != b {
		t.Fatalf("b again: %s %v %v", again, created, err)
	}
}

// Two nodes racing to enqueue one idempotency key with different bodies:
// for every key exactly one run is queued, and the other enqueue is
// refused with the winner's run id; the same body again is the same run.
func TestIdemKeyReusedWithAnotherBody(t *testing.T) {
	ns, admin := nodes(t, 2, fast)
	ctx := context.Background()
	for i := range 20 {
		key := fmt.Sprintf("race-%d", i)
		type res struct {
			id      string
			created bool
			err     error
		}
		out := make([]res, 2)
		var wg sync.WaitGroup
		for j := range 2 {
			wg.Go(func() {
				id, created, err := ns[j].Enqueue(ctx, EnqueueOptions{SessionID: "race", Cwd: "/r", IdemKey: key,
					Input: json.RawMessage(fmt.Sprintf(`{"body":%d}`, j)), Body: fmt.Sprintf("body-%d", j)})
				out[j] = res{id, created, err}
			})
		}
		wg.Wait()
		win, lose := out[0], out[1]
		if !win.created {
			win, lose = lose, win
		}
		if !win.created || win.err != nil {
			t.Fatalf("%s: no enqueue won: %+v", key, out)
		}
		var reused *IdemKeyReusedError
		if lose.created || !errors.As(lose.err, &reused) || !errors.Is(lose.err, ErrIdemKeyReused) || reused.RunID != win.id {
			t.Fatalf("%s: the second enqueue with another body: %+v, want ErrIdemKeyReused naming %s", key, lose, win.id)
		}
		var runs int
		_ = admin.QueryRow(ctx, `SELECT count(*) FROM runs WHERE session_id = 'race' AND idem_key = $1`, key).Scan(&runs)
		if runs != 1 {
			t.Fatalf("%s: %d runs queued", key, runs)
		}
	}
	a, _, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "race", IdemKey: "same", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	b, created, err := ns[1].Enqueue(ctx, EnqueueOptions{SessionID: "race", IdemKey: "same", Body: "b"})
	if err != nil || created || b != a {
		t.Fatalf("the same body again: %s %v %v, want run %s", b, created, err, a)
	}
}

// Busy names the active run of a session whichever node holds it, says a
// session another node holds a lease on is busy, and a free one is not.
func TestBusy(t *testing.T) {
	ns, _ := nodes(t, 2, fast)
	ctx := context.Background()
	runID, _, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "busy", Cwd: "/b"})
	if err != nil {
		t.Fatal(err)
	}
	if id, busy, err := ns[1].Busy(ctx, "busy"); err != nil || busy || id != "" {
		t.Fatalf("a queued run: %q %v %v, want not busy", id, busy, err)
	}
	c := waitClaim(t, ns[0], 5*time.Second)
	for i, n := range ns {
		if id, busy, err := n.Busy(ctx, "busy"); err != nil || !busy || id != runID {
			t.Fatalf("node %d during the run: %q %v %v, want busy with run %s", i, id, busy, err, runID)
		}
	}
	if err := ns[0].Release(ctx, c, "succeeded", nil); err != nil {
		t.Fatal(err)
	}
	if _, busy, err := ns[1].Busy(ctx, "busy"); err != nil || busy {
		t.Fatalf("after the run: %v %v", busy, err)
	}
	if _, busy, err := ns[1].Busy(ctx, "nosuch"); err != nil || busy {
		t.Fatalf("no such session: %v %v", busy, err)
	}
}

// A node that hands its run off (shutting down) gives the lease back at
// once: another node claims the run within a second although the lease
// was 30 s, as attempt 2; the first node's claim ends with ErrHandedOff
// and its later appends and release are refused.
func TestHandoff(t *testing.T) {
	ns, _ := nodes(t, 2, Config{LeaseTTL: 30 * time.Second, Heartbeat: 10 * time.Second, SelfFence: 20 * time.Second, Poll: 50 * time.Millisecond})
	ctx := context.Background()
	if _, _, err := ns[0].Enqueue(ctx, EnqueueOptions{SessionID: "handoff", Cwd: "/h"}); err != nil {
		t.Fatal(err)
	}
	a := waitClaim(t, ns[0], 5*time.Second)
	sess, err := a.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Append(ctx, userMsg("go")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ns[0].Handoff(ctx, a); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(a.Context()), ErrHandedOff) {
		t.Fatalf("the handed-off claim's cause: %v", context.Cause(a.Context()))
	}
	b := waitClaim(t, ns[1], 5*time.Second)
	took := time.Since(start)
	if b.Run.ID != a.Run.ID || b.Run.Attempt != 2 || took > 2*time.Second {
		t.Fatalf("claimed %s at attempt %d after %s, want %s at attempt 2 at once", b.Run.ID, b.Run.Attempt, took, a.Run.ID)
	}
	t.Logf("claimed by the other node %s after the handoff (LeaseTTL 30s)", took.Round(time.Millisecond))
	if _, err := sess.Append(ctx, userMsg("late")); !errors.Is(err, ErrFenced) {
		t.Fatalf("an append after the handoff: %v, want ErrFenced", err)
	}
	if err := ns[0].Release(ctx, a, "aborted", nil); !errors.Is(err, ErrFenced) {
		t.Fatalf("a release after the handoff: %v, want ErrFenced", err)
	}
	if err := ns[1].Release(ctx, b, "succeeded", nil); err != nil {
		t.Fatal(err)
	}
}

// PruneEvents deletes a session's old events but its last ones, keeps
// every event of a run still active, and the seq goes on from the last
// one kept; a node with EventRetention set prunes by itself.
func TestPruneEvents(t *testing.T) {
	cfg := fast
	cfg.EventRetention = -1 // pruned by hand first
	ns, admin := nodes(t, 1, cfg)
	n := ns[0]
	ctx := context.Background()
	count := func(sid string) (c int, lo, hi int64) {
		_ = admin.QueryRow(ctx, `SELECT count(*), coalesce(min(seq), 0), coalesce(max(seq), 0) FROM session_events WHERE session_id = $1`, sid).Scan(&c, &lo, &hi)
		return
	}
	events := func(c *Claim, k int) {
		for range k {
			if _, err := n.AppendEvent(ctx, c, "message_update", json.RawMessage(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, _, err := n.Enqueue(ctx, EnqueueOptions{SessionID: "ended", Cwd: "/e"}); err != nil {
		t.Fatal(err)
	}
	c := waitClaim(t, n, 5*time.Second)
	events(c, 10)
	if err := n.Release(ctx, c, "succeeded", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Enqueue(ctx, EnqueueOptions{SessionID: "active", Cwd: "/a"}); err != nil {
		t.Fatal(err)
	}
	active := waitClaim(t, n, 5*time.Second)
	events(active, 5)
	deleted, err := n.PruneEvents(ctx, 0, 3)
	if err != nil || deleted != 7 {
		t.Fatalf("pruned %d, %v; want 7 (10 of the ended run but its last 3)", deleted, err)
	}
	if c, lo, hi := count("ended"); c != 3 || lo != 8 || hi != 10 {
		t.Fatalf("the ended session keeps %d events, seq %d…%d; want 3, 8…10", c, lo, hi)
	}
	if c, _, _ := count("active"); c != 5 {
		t.Fatalf("the active run keeps %d events, want 5", c)
	}
	if err := n.Release(ctx, active, "succeeded", nil); err != nil {
		t.Fatal(err)
	}
	// The seq goes on from the last event kept.
	if _, _, err := n.Enqueue(ctx, EnqueueOptions{SessionID: "ended", Cwd: "/e", IdemKey: "2"}); err != nil {
		t.Fatal(err)
	}
	next := waitClaim(t, n, 5*time.Second)
	if seq, err := n.AppendEvent(ctx, next, "run_start", json.RawMessage(`{}`)); err != nil || seq != 11 {
		t.Fatalf("the next event's seq: %d %v, want 11", seq, err)
	}
	if err := n.Release(ctx, next, "succeeded", nil); err != nil {
		t.Fatal(err)
	}

	// A node with a retention prunes by itself; never the last event.
	auto := fast
	auto.EventRetention, auto.EventsKept, auto.PruneEvery = time.Millisecond, 1, 50*time.Millisecond
	st, err := pgstore.New(ctx, n.Store().Pool(), &pgstore.Config{Owner: "pruner"})
	if err != nil {
		t.Fatal(err)
	}
	pruner, err := New(ctx, st, &auto)
	if err != nil {
		t.Fatal(err)
	}
	defer pruner.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c1, _, hi1 := count("ended")
		c2, _, hi2 := count("active")
		if c1 == 1 && c2 == 1 && hi1 == 11 && hi2 == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after pruning: %d events (last %d) and %d (last %d), want the last one of each", c1, hi1, c2, hi2)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A session a node opens outside its claims (the gateway's compact on a
// node that does not run it) is leased for LeaseTTL and renewed by the
// heartbeat while it is open; when the node dies with it open, another
// node claims the session's next run once the lease has lapsed.
func TestOpenOutsideClaimLeaseExpires(t *testing.T) {
	ns, admin := nodes(t, 2, fast)
	ctx := context.Background()
	if _, _, err := ns[1].Enqueue(ctx, EnqueueOptions{SessionID: "cmp", Cwd: "/c"}); err != nil {
		t.Fatal(err)
	}
	c := waitClaim(t, ns[1], 5*time.Second)
	first, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Append(ctx, userMsg("hello")); err != nil {
		t.Fatal(err)
	}
	first.Close()
	if err := ns[1].Release(ctx, c, "succeeded", nil); err != nil {
		t.Fatal(err)
	}

	sess, err := ns[0].SessionStore().Open(ctx, "cmp", nil) // not a claim of ns[0]
	if err != nil {
		t.Fatal(err)
	}
	var expires *time.Time
	if err := admin.QueryRow(ctx, `SELECT lease_expires FROM sessions WHERE id = 'cmp'`).Scan(&expires); err != nil {
		t.Fatal(err)
	}
	if expires == nil {
		t.Fatal("the lease of a session opened outside a claim has no expiry: a node dying now leaves it unclaimable")
	}
	// While it is open the heartbeat renews it: no takeover after 2 TTLs.
	if _, _, err := ns[1].Enqueue(ctx, EnqueueOptions{SessionID: "cmp", Cwd: "/c"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*fast.LeaseTTL)
	if c2, err := ns[1].WaitClaim(wctx); err == nil {
		cancel()
		t.Fatalf("run %s claimed while node a still had the session open", c2.Run.ID)
	}
	cancel()
	if _, err := sess.Append(ctx, userMsg("still mine")); err != nil {
		t.Fatalf("an append by the opener after 2 TTLs: %v", err)
	}
	// The node dies with the session open (no Close, no release).
	died := time.Now()
	ns[0].Close()
	c2 := waitClaim(t, ns[1], fast.LeaseTTL+5*time.Second)
	t.Logf("claimed %s after the opener died (LeaseTTL %s)", time.Since(died).Round(time.Millisecond), fast.LeaseTTL)
	if _, err := sess.Append(ctx, userMsg("late")); !errors.Is(err, ErrFenced) {
		t.Fatalf("the dead opener's append after the takeover: %v, want ErrFenced", err)
	}
	sess.Close()
	if err := ns[1].Release(ctx, c2, "succeeded", nil); err != nil {
		t.Fatal(err)
	}
}
