package gateway

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// Cluster mode (Config.Cluster set): runs are queued in PostgreSQL and
// claimed by any node; a node runs what it claimed under the session's
// lease, writes the run's events to session_events (which numbers them),
// and every node serves a session's streams from that table, so seq is one
// gap-free stream whichever node a client is connected to. Aborts and
// steering reach the owner through run_commands.

// DefaultClusterRuns is the default of Config.ClusterRuns.
const DefaultClusterRuns = 64

// clusterInput is the payload of a queued run: what StartRun accepted.
type clusterInput struct {
	Input    json.RawMessage `json:"input"`
	Model    string          `json:"model,omitempty"`
	Thinking string          `json:"thinking,omitempty"`
	Cwd      string          `json:"cwd,omitempty"`
}

// clusterState is the Server's part in a cluster.
type clusterState struct {
	node *cluster.Node
	// claims ends the claim loop; tails ends the event tails (after the
	// runs ended, so their last events reach this node's clients).
	claims, tails context.Context
	stopClaims    context.CancelFunc
	stopTails     context.CancelFunc
	claimWG       sync.WaitGroup
	tailWG        sync.WaitGroup
}

// startCluster starts the claim loop of a Server in cluster mode.
func (s *Server) startCluster() {
	c := &s.cl
	c.node = s.cfg.Cluster
	c.claims, c.stopClaims = context.WithCancel(context.Background())
	c.tails, c.stopTails = context.WithCancel(context.Background())
	c.claimWG.Go(s.claimLoop)
}

// claimLoop claims runs while the Server is up, at most ClusterRuns at a
// time.
func (s *Server) claimLoop() {
	ctx := s.cl.claims
	slots := make(chan struct{}, s.cfg.ClusterRuns)
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		c, err := s.cl.node.WaitClaim(ctx)
		if c == nil {
			<-slots
			if ctx.Err() != nil {
				return
			}
			if err != nil { // the database is away: try again soon
				select {
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
					return
				}
			}
			continue
		}
		s.startClaimed(c, func() { <-slots })
	}
}

// startClaimed runs a claimed run on this node.
func (s *Server) startClaimed(c *cluster.Claim, done func()) {
	var in clusterInput
	_ = json.Unmarshal(c.Run.Input, &in)
	input, e := parseInput(in.Input)
	ss, se := s.session(c.Run.SessionID)
	if se != nil {
		// The session is gone: nothing can run; end the run.
		_ = s.cl.node.Release(context.Background(), c, RunFailed, nil)
		done()
		return
	}
	s.ensureTail(ss)
	rs := &runState{id: c.Run.ID, sess: ss, input: input, createdAt: s.clk.Now().UTC(), status: RunQueued,
		finished: make(chan struct{}), claim: c, release: done}
	w := newEventWriter(s.cl.node, c)
	ss.emu.Lock()
	ss.writer = w
	rs.afterSeq = ss.seq
	ss.emu.Unlock()
	s.mu.Lock()
	if in.Model != "" {
		ss.model = in.Model
	}
	if in.Thinking != "" {
		ss.thinking = in.Thinking
	}
	s.runs[rs.id] = rs
	ss.active = rs
	s.wg.Add(1) // launch
	s.mu.Unlock()
	// A fenced node (its lease lost, or not renewed in time) stops the run
	// here without writing more: the claim's context ends, and the writer
	// refuses what follows.
	stop := context.AfterFunc(c.Context(), func() { s.abortRun(rs) })
	go func() {
		<-rs.finished
		stop()
	}()
	go s.runCommands(rs)
	if e != nil {
		s.finishUnstarted(rs, RunFailed, e.Message)
		s.wg.Done()
		return
	}
	resume, err := s.settle(rs)
	if err != nil {
		s.finishUnstarted(rs, RunFailed, err.Error())
		s.wg.Done()
		return
	}
	if resume {
		rs.resume = true
		s.resetOpenMessage(rs)
	}
	s.launch(rs)
}

// settle readies a claimed run's session. On the run's first attempt it
// records how many entries the session has, so that a takeover knows what
// the run wrote. After a takeover it reports whether the prompt was
// stored (then the run resumes from the transcript instead of saying it
// again), and gives each call that was running on the dead node, marked
// started (BeforeTool) and without a result, the result that says it was
// interrupted.
func (s *Server) settle(rs *runState) (resume bool, err error) {
	c := rs.claim
	ctx := c.Context()
	count := 0
	tr, err := s.cfg.Store.Load(ctx, rs.sess.id)
	switch {
	case err == nil:
		count = len(tr.Entries)
	case !errors.Is(err, session.ErrNotFound):
		return false, err
	}
	if c.Run.Attempt == 1 || c.Run.Base < 0 {
		return false, s.cl.node.SetBase(ctx, c, count)
	}
	if tr == nil || !promptAfter(tr.Entries, c.Run.Base) {
		return false, nil // nothing of the run was stored: it starts over
	}
	sess, err := c.Session(ctx)
	if err != nil {
		return false, err
	}
	defer sess.Close()
	if _, err := cluster.ResolveInDoubt(ctx, sess, nil); err != nil {
		return false, err
	}
	return true, nil
}

// promptAfter reports whether a user message follows the first base
// entries.
func promptAfter(entries []session.Entry, base int) bool {
	for _, e := range entries[min(base, len(entries)):] {
		if e.Type == session.EntryMessage && e.Message != nil && e.Message.Role == llm.RoleUser {
			return true
		}
	}
	return false
}

// resetOpenMessage withdraws, for the clients, a reply of the run that was
// streaming when its node stopped (a message_start without its
// message_end): retry_reset with reason takeover, before the new owner
// asks for the reply again.
func (s *Server) resetOpenMessage(rs *runState) {
	ss := rs.sess
	ss.emu.Lock()
	open := false
	for _, f := range ss.ring[ss.ringHead:] {
		if f.runID != rs.id {
			continue
		}
		switch f.typ {
		case string(agent.EventMessageStart):
			open = true
		case string(agent.EventMessageEnd):
			open = false
		}
	}
	ss.emu.Unlock()
	if open {
		s.emitGateway(ss, "retry_reset", rs.id, map[string]any{"reason": "takeover"})
	}
}

// runCommands delivers the commands other nodes sent to a claimed run.
func (s *Server) runCommands(rs *runState) {
	c := rs.claim
	for {
		select {
		case cmd := <-c.Commands():
			var text string
			if cmd.Kind != cluster.CommandApproval {
				_ = json.Unmarshal(cmd.Payload, &text)
			}
			s.mu.Lock()
			h := rs.h
			s.mu.Unlock()
			switch cmd.Kind {
			case cluster.CommandAbort:
				s.abortRun(rs)
			case cluster.CommandSteer, cluster.CommandFollowUp:
				// Counted as a local one is (Steer), before it is handed
				// over; the cluster learns when the run reads it.
				s.mu.Lock()
				rs.injected++
				rs.remote++
				s.mu.Unlock()
				if h == nil || !(cmd.Kind == cluster.CommandSteer && h.Steer(text) || h.FollowUp(text)) {
					s.mu.Lock()
					rs.injected = max(rs.injected-1, 0)
					rs.remote = max(rs.remote-1, 0)
					s.mu.Unlock()
					s.markRead(rs)
				}
			case cluster.CommandApproval:
				var ap cluster.ApprovalPayload
				var ans ApprovalAnswer
				if json.Unmarshal(cmd.Payload, &ap) != nil || json.Unmarshal(ap.Decision, &ans) != nil {
					continue
				}
				s.mu.Lock()
				pa := s.approvals[ap.ActionID]
				s.mu.Unlock()
				if pa != nil {
					s.resolveAction(pa, ans.Decision, ans.Message, "client")
				}
			}
		case <-rs.finished:
			return
		}
	}
}

// clusterSession returns the state of a session the database knows
// without a transcript yet (declared, or queued on another node), made for
// it on this node the first time.
func (s *Server) clusterSession(id, cwd string) (*sessionState, *Error) {
	dcwd, ok, err := s.cl.node.Declared(context.Background(), id)
	if err != nil {
		return nil, errorf(CodeInternal, "%v", err)
	}
	if !ok {
		return nil, errorf(CodeNotFound, "no session %q", id)
	}
	if cwd == "" {
		cwd = dcwd
	}
	if cwd == "" {
		return nil, errorf(CodeNotFound, "no session %q", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.sessions[id]; old != nil {
		return old, nil
	}
	ss := &sessionState{id: id, cwd: cwd, created: s.clk.Now().UTC(), idem: map[string]idemEntry{}}
	s.sessions[id] = ss
	return ss, nil
}

// enqueueRun is StartRun in cluster mode: the run is queued in the
// database for any node to claim. The same idempotency key on any node
// returns the run it queued.
func (s *Server) enqueueRun(ctx context.Context, sessionID string, req StartRunRequest) (RunInfo, *Error) {
	if req.OnBusy != OnBusyQueue {
		return RunInfo{}, errorf(CodeInvalidRequest, "onBusy %q: a server on a cluster queues runs (onBusy queue); steer the active run with POST /v1/runs/{id}/steer", req.OnBusy)
	}
	if s.stopping() {
		return RunInfo{}, errorf(CodeUnavailable, "the server is shutting down")
	}
	ss, e := s.session(sessionID)
	if e != nil {
		return RunInfo{}, e
	}
	s.mu.Lock()
	in := clusterInput{Input: req.Input, Model: req.Model, Thinking: req.Thinking, Cwd: ss.cwd}
	if in.Model == "" {
		in.Model = ss.model
	}
	if in.Thinking == "" {
		in.Thinking = ss.thinking
	}
	s.mu.Unlock()
	payload, err := json.Marshal(in)
	if err != nil {
		return RunInfo{}, errorf(CodeInvalidRequest, "input: %v", err)
	}
	body := req.fingerprint()
	id, _, err := s.cl.node.Enqueue(ctx, cluster.EnqueueOptions{SessionID: ss.id, Cwd: ss.cwd, Input: payload,
		IdemKey: ss.id + "/" + req.IdempotencyKey, Body: hex.EncodeToString(body[:])})
	if errors.Is(err, cluster.ErrIdemKeyReused) {
		return RunInfo{}, idemKeyReused(req.IdempotencyKey, id)
	}
	if err != nil {
		return RunInfo{}, errorf(CodeUnavailable, "%v", err)
	}
	return RunInfo{RunID: id, SessionID: ss.id, Status: RunQueued}, nil
}

// sendMessage sends a steer or follow-up message to a run this node does
// not hold, within Config.InjectQueue counted across the cluster.
func (s *Server) sendMessage(ctx context.Context, runID, kind, text string) *Error {
	err := s.cl.node.SendMessage(ctx, runID, kind, text, s.cfg.InjectQueue)
	switch {
	case errors.Is(err, cluster.ErrQueueFull):
		return s.injectFullID(runID)
	case errors.Is(err, cluster.ErrRunEnded):
		return errorf(CodeRunNotActive, "run %s is not active", runID)
	case err != nil:
		return errorf(CodeUnavailable, "%v", err)
	}
	return nil
}

// markRead tells the cluster that claimed run rs read (or could not take)
// a message another node sent it, so senders have room again.
func (s *Server) markRead(rs *runState) {
	if rs.claim == nil || s.cl.node == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.cl.node.MarkRead(ctx, rs.id); err != nil {
		s.cfg.Logger.Warn("gateway: could not record that a run read a message", "run", rs.id, "err", err)
	}
}

// sendCommand sends a command to a run this node does not hold.
func (s *Server) sendCommand(ctx context.Context, runID, kind, text string) *Error {
	var payload json.RawMessage
	if text != "" {
		payload, _ = json.Marshal(text)
	}
	err := s.cl.node.Send(ctx, runID, kind, payload)
	if errors.Is(err, cluster.ErrRunEnded) {
		return errorf(CodeRunNotActive, "run %s is not active", runID)
	}
	if err != nil {
		return errorf(CodeUnavailable, "%v", err)
	}
	return nil
}

// finishClaimed ends a claimed run: its last events are written under
// its lease, then the lease is given back (Release, which refuses when
// another node took the session over: nothing more is written then).
func (s *Server) finishClaimed(rs *runState) {
	ss := rs.sess
	s.cancelPending(rs, "cancelled")
	s.mu.Lock()
	rs.ended = true
	rs.endedAt = s.clk.Now().UTC()
	status := rs.status
	s.retireLocked(rs)
	if ss.active == rs {
		ss.active = nil
	}
	s.mu.Unlock()
	s.emitStatus(ss)
	ss.emu.Lock()
	w := ss.writer
	ss.writer = nil
	ss.emu.Unlock()
	if w != nil {
		w.close()
	}
	if !finalStatus(status) {
		status = RunFailed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := s.cl.node.Release(ctx, rs.claim, status, nil)
	cancel()
	if errors.Is(err, cluster.ErrFenced) {
		// Another node took the run over: how it went is the database's
		// to say, not this node's aborted copy.
		s.mu.Lock()
		delete(s.runs, rs.id)
		s.mu.Unlock()
	}
	rs.closeFinished()
	rs.release()
}

// ensureTail makes this node follow a session's events in the database:
// the ring gets what is stored, then each new event as it is stored.
func (s *Server) ensureTail(ss *sessionState) {
	ss.tailOnce.Do(func() {
		ctx := s.cl.tails
		evs, _ := s.cl.node.Events(ctx, ss.id, 0, 0)
		ss.emu.Lock()
		for _, e := range evs {
			s.deliverLocked(ss, e)
		}
		ss.emu.Unlock()
		s.cl.tailWG.Go(func() { s.tail(ctx, ss) })
	})
}

func (s *Server) tail(ctx context.Context, ss *sessionState) {
	for {
		ss.emu.Lock()
		after := ss.seq
		ss.emu.Unlock()
		evs, err := s.cl.node.WaitEvents(ctx, ss.id, after)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				return
			}
			continue
		}
		ss.emu.Lock()
		for _, e := range evs {
			s.deliverLocked(ss, e)
		}
		ss.emu.Unlock()
	}
}

// deliverLocked hands a stored event to the session's ring and clients.
// ss.emu is held.
func (s *Server) deliverLocked(ss *sessionState, e cluster.Event) {
	if e.Seq <= ss.seq {
		return
	}
	if ss.seq > 0 && e.Seq > ss.seq+1 {
		// The events between were pruned (event retention) before this
		// node read them: the ring must not replay across the hole, and
		// the live subscribers are told to resync, never left a gap.
		clear(ss.ring)
		ss.ring, ss.ringHead, ss.ringBytes = nil, 0, 0
		for sub := range ss.subs {
			sub.offer(frame{seq: e.Seq - 1, typ: EventResync, runID: sub.runID,
				data: gatewayEvent(EventResync, e.Seq-1, sub.runID, ss.id, map[string]any{"oldestSeq": e.Seq, "headSeq": e.Seq - 1})})
		}
	}
	ss.seq = e.Seq
	f := frame{seq: e.Seq, typ: e.Type, runID: e.RunID, data: e.Data}
	s.ringAppend(ss, f)
	for sub := range ss.subs {
		sub.offer(f)
	}
}

// eventWriter stores a claimed run's events in order, under its lease,
// off the run's goroutine (OnEvent must not block).
type eventWriter struct {
	node  *cluster.Node
	claim *cluster.Claim

	mu     sync.Mutex
	q      []pendingEvent
	closed bool
	fenced bool
	wake   chan struct{}
	done   chan struct{}
}

type pendingEvent struct {
	typ string
	mk  func(seq int64) []byte
}

func newEventWriter(n *cluster.Node, c *cluster.Claim) *eventWriter {
	w := &eventWriter{node: n, claim: c, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// add queues an event; it never blocks.
func (w *eventWriter) add(typ string, mk func(seq int64) []byte) {
	w.mu.Lock()
	if !w.closed && !w.fenced {
		w.q = append(w.q, pendingEvent{typ: typ, mk: mk})
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// close waits until what was queued is stored (or refused).
func (w *eventWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}

// writeAttempts bounds the tries of one event while the database is away.
const writeAttempts = 20

func (w *eventWriter) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		q := w.q
		w.q = nil
		closed := w.closed
		w.mu.Unlock()
		for _, ev := range q {
			if !w.store(ev) {
				w.mu.Lock()
				w.fenced = true
				w.q = nil
				w.mu.Unlock()
				break
			}
		}
		if len(q) == 0 {
			if closed {
				return
			}
			<-w.wake
		}
	}
}

// store writes one event, retrying while the database cannot be reached;
// false when the lease is lost (nothing more may be written).
func (w *eventWriter) store(ev pendingEvent) bool {
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := w.node.AppendEventSeq(ctx, w.claim, ev.typ, ev.mk)
		cancel()
		if err == nil {
			return true
		}
		if errors.Is(err, cluster.ErrFenced) {
			return false
		}
		if attempt >= writeAttempts {
			return true // dropped: the stream's seq stays gap-free
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// respondCluster answers a pending action in the database, whichever node
// holds its run: the first answer wins there, and the owner gets it as a
// command.
func (s *Server) respondCluster(ctx context.Context, id string, ans ApprovalAnswer) *Error {
	d, err := json.Marshal(ans)
	if err != nil {
		return errorf(CodeInvalidRequest, "%v", err)
	}
	_, err = s.cl.node.Resolve(ctx, id, d)
	switch {
	case errors.Is(err, cluster.ErrAlreadyResolved):
		return errorf(CodeAlreadyResolved, "approval %s was already resolved", id)
	case errors.Is(err, cluster.ErrNoAction):
		return errorf(CodeNotFound, "no approval %q", id)
	case err != nil:
		return errorf(CodeUnavailable, "%v", err)
	}
	return nil
}

// clusterPending lists the pending actions of a run held by another node.
func (s *Server) clusterPending(ctx context.Context, runID string) ([]PendingAction, *Error) {
	list, err := s.cl.node.PendingActions(ctx, runID)
	if err != nil {
		return nil, errorf(CodeUnavailable, "%v", err)
	}
	out := []PendingAction{}
	for _, a := range list {
		var pa PendingAction
		if json.Unmarshal(a.Request, &pa) == nil {
			out = append(out, pa)
		}
	}
	return out, nil
}

// beforeTool marks, in the transcript, a call that may change things as
// started, just before it runs, under the run's lease: after a takeover
// it gets the result saying it was interrupted. A fenced node's append is
// refused, and the call does not run.
func (s *Server) beforeTool(rs *runState) func(ctx context.Context, call tool.Call, readOnly bool, sc *runner.Scope) error {
	return func(ctx context.Context, call tool.Call, readOnly bool, sc *runner.Scope) error {
		if readOnly || sc == nil {
			return nil
		}
		_, err := sc.Append(ctx, cluster.ToolStarted(rs.id, int(rs.turn.Load()), llm.Content{ID: call.ID, Name: call.Name}))
		return err
	}
}

// clusterRun describes a run this node does not hold, from the database.
func (s *Server) clusterRun(ctx context.Context, id string) (Run, *Error) {
	r, ok, err := s.cl.node.RunRecord(ctx, id)
	if err != nil {
		return Run{}, errorf(CodeUnavailable, "%v", err)
	}
	if !ok {
		return Run{}, errorf(CodeNotFound, "no run %q", id)
	}
	status := r.Status
	if status == cluster.StatusRequiresAction {
		status = StatusRequiresAction
	}
	if !finalStatus(status) {
		// Its run_end may be stored before its owner records the end.
		if data, ok, err := s.cl.node.LastEvent(ctx, id, string(runner.EventRunEnd)); err == nil && ok {
			var end struct{ Reason string }
			if json.Unmarshal(data, &end) == nil && end.Reason != "" {
				status = runStatusOf(end.Reason)
			}
		}
	}
	return Run{ID: r.ID, SessionID: r.SessionID, Status: status, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, EndedAt: r.EndedAt}, nil
}

// NotStartedText is the result given, after a takeover, to a call that may
// change things and had not started when its node stopped (it was not
// marked started).
const NotStartedText = "not run: the machine running this call stopped before it started"

// settleUnanswered gives, after a takeover, a result to each call of the
// last reply that has none and was not marked started: a call that only
// reads is run again (tools), one that may change things had not started
// and gets NotStartedText. Each result is written once (IdemKey), so a
// second takeover does not answer a call twice.
func (s *Server) settleUnanswered(ctx context.Context, rs *runState, tools *tool.Registry) error {
	sess, err := rs.claim.Session(ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	for _, call := range unanswered(sess.Transcript()) {
		var msg llm.Message
		kind := "notrun"
		if tools != nil && tools.ReadOnly(tool.Call{ID: call.ID, Name: call.Name, Args: call.Arguments}) {
			kind = "rerun"
			msg = tools.Execute(ctx, call, nil).Message(call.ID, call.Name)
		} else {
			msg = tool.ErrorResult(NotStartedText).Message(call.ID, call.Name)
		}
		msg.Timestamp = llm.NowMillis()
		e := session.MessageEntry(msg)
		e.IdemKey = rs.id + "/" + kind + "/" + call.ID + "/result"
		if _, err := sess.Append(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// unanswered returns the tool calls of the last reply on t's path that
// have no result after it.
func unanswered(t *session.Transcript) []llm.Content {
	path := t.Path(t.Leaf)
	for i := len(path) - 1; i >= 0; i-- {
		m := path[i].Message
		if path[i].Type != session.EntryMessage || m == nil || m.Role != llm.RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, later := range path[i+1:] {
			if lm := later.Message; lm != nil && lm.Role == llm.RoleToolResult {
				answered[lm.ToolCallID] = true
			}
		}
		var out []llm.Content
		for _, c := range m.Content {
			if c.Type == llm.ContentToolCall && !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

// clusterPendingFrames are the requests of a session's unanswered
// approvals as the database has them, whichever node holds their run, and
// the session's seq on this node when they were read.
type clusterPendingFrames struct {
	frames []frame
	head   int64
	runID  string
}

// clusterPendingFrames reads the requests of the session's unanswered
// approvals from the database, before subscribe takes its locks.
func (s *Server) clusterPendingFrames(ss *sessionState, runID string) clusterPendingFrames {
	ss.emu.Lock()
	out := clusterPendingFrames{head: ss.seq, runID: runID}
	ss.emu.Unlock()
	ctx, cancel := context.WithTimeout(s.cl.tails, 5*time.Second)
	defer cancel()
	evs, err := s.cl.node.PendingEvents(ctx, ss.id, runID, EventApprovalRequested, "approvalId")
	if err != nil {
		return out // the client can still list them (GET /v1/runs/{id}/pending)
	}
	for _, e := range evs {
		out.frames = append(out.frames, frame{seq: e.Seq, typ: e.Type, runID: e.RunID, data: e.Data})
	}
	return out
}

// appendLocked adds to a new subscription's first frames the approval
// requests of other nodes' runs that still wait (those of this node's runs
// are in local), as subscribe does for local ones: the same bytes, without
// an id, unless the replay has them already. A request this node received
// after the database was read (seq above head) is taken from the ring; one
// whose answer reached the ring since is left out. ss.emu and s.mu are held.
func (p clusterPendingFrames) appendLocked(q []frame, ss *sessionState, local []*pendingAction, afterSeq int64, resync bool) []frame {
	idOf := func(f frame) string {
		var v struct {
			ApprovalID string `json:"approvalId"`
		}
		_ = json.Unmarshal(f.data, &v)
		return v.ApprovalID
	}
	seen := map[string]bool{}
	for _, pa := range local {
		seen[pa.ID] = true
	}
	frames := p.frames
	answered := map[string]bool{}
	var late []frame
	for _, f := range ss.ring[ss.ringHead:] {
		if f.seq <= p.head || (p.runID != "" && f.runID != p.runID) {
			continue
		}
		switch f.typ {
		case EventApprovalRequested:
			late = append(late, f)
		case EventApprovalResolved:
			answered[idOf(f)] = true
		}
	}
	frames = append(frames, late...)
	for _, f := range frames {
		id := idOf(f)
		if id == "" || seen[id] || answered[id] {
			continue
		}
		seen[id] = true
		if afterSeq >= 0 && !resync && f.seq > afterSeq {
			continue // in the replay already, with its id
		}
		f.noID = true
		q = append(q, f)
	}
	return q
}

// clusterBusy refuses (409) to change a session that another node is
// running or holds: DELETE and /compact must not cut a transcript a run
// on another node is writing. A run on this node is the caller's to see.
func (s *Server) clusterBusy(ctx context.Context, ss *sessionState) *Error {
	if s.cl.node == nil {
		return nil
	}
	s.mu.Lock()
	local := ss.active != nil
	s.mu.Unlock()
	if local {
		return nil
	}
	runID, busy, err := s.cl.node.Busy(ctx, ss.id)
	if err != nil {
		return errorf(CodeUnavailable, "%v", err)
	}
	if !busy {
		return nil
	}
	e := errorf(CodeSessionBusy, "session %s is in use on another node; try again when its run has ended", ss.id)
	if runID != "" {
		e.Details = map[string]any{"activeRunId": runID}
	}
	return e
}

// handOff gives the leases of claimed runs still going at shutdown back to
// the cluster, so that another node resumes them at once instead of their
// being aborted; each run then stops here without writing more.
func (s *Server) handOff(runs []*runState) {
	for _, rs := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.cl.node.Handoff(ctx, rs.claim); err != nil && !errors.Is(err, cluster.ErrFenced) {
			slog.Warn("run stopped at shutdown; its lease will lapse before another node resumes it", "run", rs.id, "err", err)
		}
		cancel()
	}
}
