package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// The onBusy modes of a run started while its session has one.
const (
	OnBusyQueue     = "queue"
	OnBusySteer     = "steer"
	OnBusyInterrupt = "interrupt"
	OnBusyReject    = "reject"
)

// StartRunRequest is the body of POST /v1/sessions/{id}/runs.
type StartRunRequest struct {
	// Input is the user's message: a string, or content blocks (text and
	// image) as in the transcript.
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model,omitempty"`
	Thinking       string          `json:"thinking,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey"`
	OnBusy         string          `json:"onBusy,omitempty"`
}

// RunInfo answers a run's start: which run has the input, and how it was
// delivered when the session was busy (steer: into the active run).
type RunInfo struct {
	RunID     string `json:"runId"`
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
	Delivered string `json:"delivered,omitempty"`
	Position  int    `json:"position,omitempty"`
}

// Run is a run as the API shows it.
type Run struct {
	ID        string     `json:"id"`
	SessionID string     `json:"sessionId"`
	Status    string     `json:"status"`
	Reason    string     `json:"reason,omitempty"`
	Usage     *llm.Usage `json:"usage,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	StartedAt time.Time  `json:"startedAt,omitzero"`
	EndedAt   time.Time  `json:"endedAt,omitzero"`
	Error     string     `json:"error,omitempty"`
}

// fingerprint is the hash of what a start asks for (its input, compacted,
// and its options): the same key must come with the same one.
func (req StartRunRequest) fingerprint() [32]byte {
	var in bytes.Buffer
	if json.Compact(&in, req.Input) != nil {
		in.Reset()
		in.Write(req.Input)
	}
	h := sha256.New()
	for _, part := range [][]byte{in.Bytes(), []byte(req.Model), []byte(req.Thinking), []byte(req.OnBusy)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// parseInput reads a run's input: a string or content blocks.
func parseInput(raw json.RawMessage) (runInput, *Error) {
	var in runInput
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return in, errorf(CodeInvalidRequest, "input is required: a string or content blocks")
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &in.text); err != nil {
			return in, errorf(CodeInvalidRequest, "input: %v", err)
		}
	} else {
		var blocks []llm.Content
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return in, errorf(CodeInvalidRequest, "input: want a string or an array of content blocks: %v", err)
		}
		var texts []string
		for i, b := range blocks {
			switch b.Type {
			case llm.ContentText:
				texts = append(texts, b.Text)
			case llm.ContentImage:
				in.images = append(in.images, b)
			default:
				return in, errorf(CodeInvalidRequest, "input[%d]: a %q block cannot be sent; use text or image", i, b.Type)
			}
		}
		in.text = strings.Join(texts, "\n")
	}
	if strings.TrimSpace(in.text) == "" && len(in.images) == 0 {
		return in, errorf(CodeInvalidRequest, "input is empty")
	}
	return in, nil
}

// StartRun starts a run on a session, or queues it behind the active one,
// or steers it into that one, as req.OnBusy says. The same idempotency
// key again returns the run it started.
func (s *Server) StartRun(ctx context.Context, sessionID string, req StartRunRequest) (RunInfo, *Error) {
	if req.IdempotencyKey == "" {
		return RunInfo{}, errorf(CodeInvalidRequest, "idempotencyKey is required: a key of the client's choosing, so a retried request does not start a second run")
	}
	switch req.OnBusy {
	case "":
		req.OnBusy = OnBusyQueue
	case OnBusyQueue, OnBusySteer, OnBusyInterrupt, OnBusyReject:
	default:
		return RunInfo{}, errorf(CodeInvalidRequest, "onBusy %q: use queue, steer, interrupt or reject", req.OnBusy)
	}
	in, e := parseInput(req.Input)
	if e != nil {
		return RunInfo{}, e
	}
	if e := s.checkSettings(ctx, req.Model, req.Thinking); e != nil {
		return RunInfo{}, e
	}
	if s.cl.node != nil {
		return s.enqueueRun(ctx, sessionID, req)
	}
	ss, e := s.session(sessionID)
	if e != nil {
		return RunInfo{}, e
	}

	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return RunInfo{}, errorf(CodeUnavailable, "the server is shutting down")
	}
	if ss.deleted {
		s.mu.Unlock()
		return RunInfo{}, errorf(CodeNotFound, "session %s was deleted", ss.id)
	}
	body := req.fingerprint()
	if prev, ok := ss.idem[req.IdempotencyKey]; ok {
		if prev.body != body {
			s.mu.Unlock()
			return RunInfo{}, idemKeyReused(req.IdempotencyKey, prev.run.id)
		}
		info := RunInfo{RunID: prev.run.id, SessionID: ss.id, Status: prev.run.status, Delivered: prev.delivered}
		s.mu.Unlock()
		return info, nil
	}
	if req.Model != "" {
		ss.model = req.Model
	}
	if req.Thinking != "" {
		ss.thinking = req.Thinking
	}
	busy := ss.active != nil || len(ss.queue) > 0
	if busy && req.OnBusy == OnBusyReject {
		id := ss.active
		s.mu.Unlock()
		e := errorf(CodeSessionBusy, "session %s has a run in progress", ss.id)
		if id != nil {
			e.Details = map[string]any{"activeRunId": id.id}
		}
		return RunInfo{}, e
	}
	// Steering carries text only, and only into a run nothing waits behind.
	if busy && req.OnBusy == OnBusySteer && ss.active != nil && ss.active.h != nil && len(ss.queue) == 0 && len(in.images) == 0 {
		active := ss.active
		if active.injected >= s.cfg.InjectQueue {
			s.mu.Unlock()
			return RunInfo{}, s.injectFull(active)
		}
		if active.h.Steer(in.text) {
			active.injected++
			s.remember(ss, req.IdempotencyKey, body, active, OnBusySteer)
			st := active.status
			s.mu.Unlock()
			return RunInfo{RunID: active.id, SessionID: ss.id, Status: st, Delivered: OnBusySteer}, nil
		}
		// Not steerable now (compacting, between attempts, ending): the
		// input waits for its own run instead.
	}
	if busy && len(ss.queue) >= s.cfg.SessionQueue {
		s.mu.Unlock()
		e := errorf(CodeQueueFull, "session %s already has %d queued runs", ss.id, len(ss.queue))
		e.RetryAfter = time.Second
		return RunInfo{}, e
	}
	rs := &runState{id: "run_" + session.NewSessionID(), sess: ss, input: in,
		createdAt: s.clk.Now().UTC(), status: RunQueued, finished: make(chan struct{})}
	delivered := ""
	if busy && req.OnBusy == OnBusySteer {
		delivered = "queued"
	}
	s.remember(ss, req.IdempotencyKey, body, rs, delivered)
	s.runs[rs.id] = rs
	var interrupt *runState
	position := 0
	if !busy {
		ss.active = rs // in this critical section, so no other start sees the session free
		s.wg.Add(1)    // and Shutdown waits for it (launch)
	} else {
		if req.OnBusy == OnBusyInterrupt {
			ss.queue = append([]*runState{rs}, ss.queue...)
			interrupt = ss.active
			position = 1
		} else {
			ss.queue = append(ss.queue, rs)
			position = len(ss.queue)
		}
	}
	ss.emu.Lock()
	rs.afterSeq = ss.seq
	ss.emu.Unlock()
	s.mu.Unlock()

	if busy {
		s.emitGateway(ss, EventRunQueued, rs.id, map[string]any{"position": position})
		if interrupt != nil {
			s.abortRun(interrupt)
		}
		return RunInfo{RunID: rs.id, SessionID: ss.id, Status: RunQueued, Position: position, Delivered: delivered}, nil
	}
	s.launch(rs)
	s.mu.Lock()
	st := rs.status
	s.mu.Unlock()
	return RunInfo{RunID: rs.id, SessionID: ss.id, Status: st}, nil
}

// checkSettings vets a model name and a thinking level.
func (s *Server) checkSettings(ctx context.Context, model, thinking string) *Error {
	if thinking != "" {
		if _, ok := llm.ParseThinkingLevel(thinking); !ok {
			return errorf(CodeInvalidRequest, "thinking %q: use off, minimal, low, medium, high or xhigh", thinking)
		}
	}
	if model != "" && s.cfg.CheckModel != nil {
		if err := s.cfg.CheckModel(ctx, model); err != nil {
			return errorf(CodeInvalidRequest, "model %q: %v", model, err)
		}
	}
	return nil
}

// launch starts rs on the runner; rs is its session's active run, and
// s.wg was incremented for it where that was decided (under s.mu, with
// closing unset), so Shutdown cannot miss it. A run that cannot start is
// finished as failed, and the next queued one launched.
func (s *Server) launch(rs *runState) {
	ss := rs.sess
	ss.cancelExpiry()
	s.mu.Lock()
	settings := RunSettings{SessionID: ss.id, Cwd: ss.cwd, Model: ss.model, Thinking: ss.thinking}
	s.mu.Unlock()
	ctx := context.Background()
	if rs.claim != nil {
		ctx = rs.claim.Context() // it ends when the lease does
	}
	isNew := !s.isPersisted(ctx, ss)
	q, err := s.cfg.Prepare(ctx, settings)
	if err == nil && rs.resume && rs.claim != nil { // a takeover
		err = s.settleUnanswered(ctx, rs, q.Tools)
	}
	if err == nil {
		q.Prompt, q.Images = rs.input.text, rs.input.images
		q.Resume = rs.resume
		rs.input = runInput{} // the runner has it now
		if rs.claim != nil {
			q.BeforeTool = s.beforeTool(rs)
			if rs.resume {
				q.Resume, q.Prompt, q.Images = true, "", nil
			}
		}
		// Prepare's Opened (and Lock) are kept: the rest names the session.
		q.Session.ID, q.Session.New, q.Session.Cwd = ss.id, isNew, ss.cwd
		q.Session.Continue, q.Session.Fork = false, ""
		q.SessionKey = ss.id
		if q.Approval == nil {
			q.Approval = &tool.Approval{}
		}
		q.Approval.Ask = s.asker(rs)
		q.OnEvent = func(ev runner.Event) { s.onRunEvent(rs, ev) }
		q.OnEventOnly = true // fanned out from OnEvent; nothing reads Run.Events
		// Running from here: the run's own events (an approval, its end)
		// may change the status before Start returns.
		s.mu.Lock()
		rs.status = RunRunning
		rs.startedAt = s.clk.Now().UTC()
		s.mu.Unlock()
		s.emitStatus(ss)
		var h *runner.Run
		h, err = s.cfg.Runner.Start(ctx, q)
		if err == nil {
			s.mu.Lock()
			rs.h = h
			abort := s.aborting
			s.mu.Unlock()
			if abort { // Shutdown's deadline passed while it started
				h.Abort()
			}
			go s.watch(rs, h) // it owns the wg count of the launch
			return
		}
	}
	s.finishUnstarted(rs, RunFailed, err.Error())
	s.wg.Done()
}

// onRunEvent numbers a runner event in its session's order and sends it
// out. It runs on the run's goroutine and must not block.
func (s *Server) onRunEvent(rs *runState, ev runner.Event) {
	if ev.Type == runner.EventRunEnd && ev.End != nil {
		s.recordEnd(rs, *ev.End)
	}
	if ev.Agent != nil && ev.Agent.Turn > 0 {
		rs.turn.Store(int64(ev.Agent.Turn))
	}
	if a := ev.Agent; a != nil && a.Type == agent.EventMessageStart && a.Message != nil && a.Message.Role == llm.RoleUser {
		s.readInjected(rs)
	}
	ss := rs.sess
	s.emit(ss, string(ev.Type), rs.id, func(seq int64) []byte {
		ev.Seq, ev.RunID, ev.SessionID = seq, rs.id, ss.id
		return eventJSON(ev)
	})
}

// recordEnd keeps how a run ended, from its run_end.
func (s *Server) recordEnd(rs *runState, res runner.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs.reason = res.Reason
	rs.usage = res.Usage
	rs.status = runStatusOf(res.Reason)
	if res.Err != nil && !res.OK() {
		rs.errMsg = res.Message
		if rs.errMsg == "" {
			rs.errMsg = res.Err.Error()
		}
	}
}

// runStatusOf maps a Result.Reason to a run status.
func runStatusOf(reason string) string {
	switch reason {
	case runner.ReasonStop:
		return RunSucceeded
	case runner.ReasonAborted:
		return RunAborted
	case runner.ReasonTimeout:
		return RunTimeout
	}
	return RunFailed
}

// finalStatus reports whether a run status is one of the ends.
func finalStatus(st string) bool {
	switch st {
	case RunSucceeded, RunFailed, RunAborted, RunTimeout:
		return true
	}
	return false
}

// watch waits for a run's end, then finishes it and launches the next
// queued run of its session.
func (s *Server) watch(rs *runState, h *runner.Run) {
	defer s.wg.Done()
	res, err := h.Wait()
	if err != nil && res.Reason == "" {
		res.Reason = runner.ReasonAborted
		if !errors.Is(err, runner.ErrAborted) {
			res.Reason = string(llm.ReasonOf(err))
		}
		s.mu.Lock()
		rs.status = runStatusOf(res.Reason)
		rs.reason = res.Reason
		rs.errMsg = err.Error()
		s.mu.Unlock()
	}
	// Read the store only while the session is not known to be in it: a
	// long transcript is not loaded again after every run.
	s.finish(rs, s.isPersisted(context.Background(), rs.sess))
}

// finish ends a run that was active and hands its session to the next
// queued run.
func (s *Server) finish(rs *runState, persisted bool) {
	if rs.claim != nil {
		s.finishClaimed(rs)
		return
	}
	ss := rs.sess
	s.cancelPending(rs, "cancelled")
	s.mu.Lock()
	rs.ended = true
	rs.endedAt = s.clk.Now().UTC()
	rs.closeFinished()
	s.retireLocked(rs)
	if persisted {
		ss.persisted = true
	}
	if ss.active == rs {
		ss.active = nil
	}
	var next *runState
	if !s.closing && !ss.deleted && len(ss.queue) > 0 {
		next = ss.queue[0]
		ss.queue = ss.queue[1:]
		ss.active = next
		s.wg.Add(1) // launch
	}
	followUp := next == nil && ss.followUp && !s.closing && !ss.deleted
	ss.followUp = false
	s.mu.Unlock()
	if followUp && s.unanswered(ss.id) {
		s.mu.Lock()
		if ss.active == nil && len(ss.queue) == 0 && !s.closing && !ss.deleted {
			next = s.resumeRunLocked(ss)
		}
		s.mu.Unlock()
	}
	if next != nil {
		s.launch(next)
	} else {
		s.scheduleExpiry(ss) // before the idle status, which clients wait for
		s.emitStatus(ss)
	}
	s.persistSeq(ss)
}

// persistSeq writes the session's last seq in Config.StateDir, replacing
// its reservation, when no run of it is going on (one could emit beyond a
// seq written now).
func (s *Server) persistSeq(ss *sessionState) {
	s.mu.Lock()
	idle := ss.active == nil
	s.mu.Unlock()
	if !idle || s.cfg.StateDir == "" || s.cl.node != nil {
		return
	}
	ss.emu.Lock()
	defer ss.emu.Unlock()
	s.writeSeq(ss.id, ss.seq, false)
	ss.reserved = ss.seq
}

// finishUnstarted ends a run that never reached the runner: it failed to
// start, or was dropped from its queue. Its stream gets a run_end.
func (s *Server) finishUnstarted(rs *runState, status, msg string) {
	ss := rs.sess
	s.mu.Lock()
	if rs.ended {
		s.mu.Unlock()
		return
	}
	rs.status, rs.errMsg, rs.ended, rs.endedAt = status, msg, true, s.clk.Now().UTC()
	rs.reason = runner.ReasonAborted
	if status == RunFailed {
		rs.reason = "start_failed"
	}
	wasActive := ss.active == rs
	if !wasActive { // finish does this for the active run
		rs.closeFinished()
		s.retireLocked(rs)
	}
	s.mu.Unlock()
	end := runner.Result{Reason: rs.reason, Message: msg}
	s.emit(ss, string(runner.EventRunEnd), rs.id, func(seq int64) []byte {
		return eventJSON(runner.Event{Type: runner.EventRunEnd, Seq: seq, RunID: rs.id, SessionID: ss.id, End: &end})
	})
	if wasActive {
		s.finish(rs, false)
	}
}

// emitStatus sends the session's status.
func (s *Server) emitStatus(ss *sessionState) {
	s.mu.Lock()
	st := ss.statusLocked()
	runID := ""
	if ss.active != nil {
		runID = ss.active.id
	}
	s.mu.Unlock()
	s.emitGateway(ss, EventSessionStatus, runID, map[string]any{"status": st})
}

// runByID returns a run the Server knows.
func (s *Server) runByID(id string) (*runState, *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.runs[id]
	if rs == nil {
		return nil, errorf(CodeNotFound, "no run %q", id)
	}
	return rs, nil
}

// GetRun describes a run.
func (s *Server) GetRun(ctx context.Context, id string) (Run, *Error) {
	rs, e := s.runByID(id)
	if e != nil && s.cl.node != nil { // held by another node, queued, or ended there
		return s.clusterRun(ctx, id)
	}
	if e != nil {
		return Run{}, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := Run{ID: rs.id, SessionID: rs.sess.id, Status: rs.status, Reason: rs.reason, CreatedAt: rs.createdAt,
		StartedAt: rs.startedAt, EndedAt: rs.endedAt, Error: rs.errMsg}
	if rs.usage != (llm.Usage{}) {
		u := rs.usage
		v.Usage = &u
	}
	return v, nil
}

// Inject is the body of POST /v1/runs/{id}/steer and /follow-up.
type Inject struct {
	Text string `json:"text"`
}

// Injected says how a message reached a run: "steer" (after the current
// tool batch) or "queued": for when the run would stop (a follow-up), or,
// when the run takes no message now (it is compacting, or ending), as a
// run of its own queued behind it, RunID.
type Injected struct {
	Delivered string `json:"delivered"`
	RunID     string `json:"runId,omitempty"`
}

// Steer sends text into a running run; follow queues it for when the run
// would stop.
func (s *Server) Steer(ctx context.Context, runID, text string, follow bool) (Injected, *Error) {
	if strings.TrimSpace(text) == "" {
		return Injected{}, errorf(CodeInvalidRequest, "text is required")
	}
	rs, e := s.runByID(runID)
	if e != nil && s.cl.node != nil { // held by another node, or queued
		kind := cluster.CommandSteer
		if follow {
			kind = cluster.CommandFollowUp
		}
		if e := s.sendMessage(ctx, runID, kind, text); e != nil {
			return Injected{}, e
		}
		if follow {
			return Injected{Delivered: "queued"}, nil
		}
		return Injected{Delivered: "steer"}, nil
	}
	if e != nil {
		return Injected{}, e
	}
	s.mu.Lock()
	// Its run_end recorded the final status before any client saw it.
	h, ended, status := rs.h, rs.ended || finalStatus(rs.status), rs.status
	s.mu.Unlock()
	if h == nil || ended {
		return Injected{}, errorf(CodeRunNotActive, "run %s is not running (%s)", runID, status)
	}
	// Counted before it is handed over, so the run's reading it always
	// comes after (readInjected).
	s.mu.Lock()
	if rs.injected >= s.cfg.InjectQueue {
		s.mu.Unlock()
		return Injected{}, s.injectFull(rs)
	}
	rs.injected++
	s.mu.Unlock()
	if !follow && h.Steer(text) {
		return Injected{Delivered: "steer"}, nil
	}
	if h.FollowUp(text) {
		return Injected{Delivered: "queued"}, nil
	}
	s.mu.Lock()
	rs.injected = max(rs.injected-1, 0)
	s.mu.Unlock()
	// Not now (compacting, between attempts, ending): the text waits as
	// the session's next run rather than being lost.
	input, _ := json.Marshal(text)
	info, e := s.StartRun(ctx, rs.sess.id, StartRunRequest{Input: input, OnBusy: OnBusyQueue,
		IdempotencyKey: "inject:" + runID + ":" + session.NewSessionID()})
	if e != nil {
		return Injected{}, e
	}
	return Injected{Delivered: "queued", RunID: info.RunID}, nil
}

// injectFull is the answer to a steer or follow-up beyond
// Config.InjectQueue.
func (s *Server) injectFull(rs *runState) *Error { return s.injectFullID(rs.id) }

func (s *Server) injectFullID(runID string) *Error {
	e := errorf(CodeQueueFull, "run %s already has %d steer and follow-up messages it has not read yet; wait for the run to read them (their message_start events) or to end, then send again", runID, s.cfg.InjectQueue)
	e.RetryAfter = time.Second
	return e
}

// readInjected is told that rs read a user message: its prompt, or one
// of the messages steered into it.
func (s *Server) readInjected(rs *runState) {
	s.mu.Lock()
	if !rs.promptSeen && !rs.resume {
		rs.promptSeen = true
		s.mu.Unlock()
		return
	}
	rs.injected = max(rs.injected-1, 0)
	remote := rs.remote > 0
	rs.remote = max(rs.remote-1, 0)
	s.mu.Unlock()
	if remote {
		s.markRead(rs)
	}
}

// AbortRun aborts a run, queued or running. Its end is the run_end event
// with reason aborted; its pending approvals resolve cancelled.
func (s *Server) AbortRun(ctx context.Context, runID string) *Error {
	rs, e := s.runByID(runID)
	if e != nil && s.cl.node != nil { // held by another node, or queued
		return s.sendCommand(ctx, runID, cluster.CommandAbort, "")
	}
	if e != nil {
		return e
	}
	s.mu.Lock()
	ended, status := rs.ended, rs.status
	s.mu.Unlock()
	if ended {
		return errorf(CodeRunNotActive, "run %s has ended (%s)", runID, status)
	}
	s.abortRun(rs)
	return nil
}

// abortRun aborts a running run, or drops a queued one.
func (s *Server) abortRun(rs *runState) {
	s.mu.Lock()
	h := rs.h
	queued := false
	if h == nil {
		ss := rs.sess
		for i, q := range ss.queue {
			if q == rs {
				ss.queue = append(ss.queue[:i:i], ss.queue[i+1:]...)
				queued = true
				break
			}
		}
	}
	s.mu.Unlock()
	if h != nil {
		s.cancelPending(rs, "cancelled")
		h.Abort()
		return
	}
	if queued {
		s.finishUnstarted(rs, RunAborted, "the run was aborted before it started")
	}
}

// wait waits until rs has been finished (its watcher is done with it) or
// ctx ends.
func (rs *runState) wait(ctx context.Context) bool {
	select {
	case <-rs.finished:
		return true
	case <-ctx.Done():
		return false
	}
}

// keptRuns is how many ended runs a session keeps (GET /v1/runs/{id}, the
// idempotency keys that name them); older ones are forgotten. A variable
// for tests.
var keptRuns = 100

// idemKeyReused is the 422 of a start that repeats an idempotency key,
// used for run runID, with another body.
func idemKeyReused(key, runID string) *Error {
	e := errorf(CodeIdempotencyKeyReused, "idempotencyKey %q was used for run %s with another body; a retry must repeat the body, a new request needs a new key", key, runID)
	e.Details = map[string]any{"runId": runID}
	return e
}

// remember maps an idempotency key to the run it reached. s.mu is held.
func (s *Server) remember(ss *sessionState, key string, body [32]byte, rs *runState, delivered string) {
	ss.idem[key] = idemEntry{run: rs, delivered: delivered, body: body}
	rs.keys = append(rs.keys, key)
}

// retireLocked keeps an ended run among the session's last keptRuns,
// forgetting the oldest beyond them. s.mu is held.
func (s *Server) retireLocked(rs *runState) {
	ss := rs.sess
	ss.ended = append(ss.ended, rs)
	for len(ss.ended) > keptRuns {
		old := ss.ended[0]
		ss.ended[0] = nil
		ss.ended = ss.ended[1:]
		delete(s.runs, old.id)
		for _, id := range old.answered {
			delete(s.resolved, id)
		}
		for _, k := range old.keys {
			if e, ok := ss.idem[k]; ok && e.run == old {
				delete(ss.idem, k)
			}
		}
	}
}
