package runner

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// Run is one run in progress, from Start. Its methods are safe for
// concurrent use.
type Run struct {
	id, key, sessionID string
	lane               string
	scope              *Scope

	cancel context.CancelCauseFunc
	done   chan struct{}
	res    Result
	err    error

	// The agent of the attempt in progress; steering and follow-ups that
	// come before it exists wait in pending. closing is set from an
	// attempt's agent_end (its loop takes no more messages) until a retry
	// starts, and for good when the attempts are over.
	mu         sync.Mutex
	agent      *agent.Agent
	compacting *atomic.Bool
	pending    []queuedMessage
	closing    bool
	// external delivers a steer to an external engine's running turn
	// (harness.Attempt.SetSteer); nil when none takes one.
	external func(llm.Message) bool

	// The events for Events, when the run was started by Start.
	queued bool
	qmu    sync.Mutex
	qcond  *sync.Cond
	q      []Event
	qhead  int
	qdone  bool
}

type queuedMessage struct {
	msg    llm.Message
	follow bool
}

// ID names the run in its events (runId).
func (h *Run) ID() string { return h.id }

// Key is the run's session key (its session lane).
func (h *Run) Key() string { return h.key }

// SessionID is the run's session ("" for a run without a store).
func (h *Run) SessionID() string { return h.sessionID }

// Start starts a run and returns as soon as it is queued. The error is
// non-nil only when the run cannot start at all (no model, a session to
// fork or continue that cannot be read, a closed Runner); how the run ended
// is Wait's.
func (r *Runner) Start(ctx context.Context, q Request) (*Run, error) {
	return r.start(ctx, r.params(q), true)
}

// Run runs q to its end: Start, then Wait, with the events only to
// q.OnEvent.
func (r *Runner) Run(ctx context.Context, q Request) (Result, error) {
	return r.runParams(ctx, r.params(q))
}

func (r *Runner) runParams(ctx context.Context, p params) (Result, error) {
	h, err := r.start(ctx, p, false)
	if err != nil {
		return Result{Err: err}, err
	}
	return h.Wait()
}

func (r *Runner) start(ctx context.Context, p params, queued bool) (*Run, error) {
	if p.Model == nil {
		return nil, errors.New("runner: Request.Model is nil; resolve a model first (llm/provider)")
	}
	s := newRun(r, p, r.cfg.Clock)
	h := s.h
	h.queued = queued && !(p.OnEventOnly && p.OnEvent != nil)
	sessID, source, create, err := s.resolveSession(ctx)
	if err != nil {
		return nil, err
	}
	h.sessionID = sessID
	key := p.SessionKey
	if key == "" {
		key = sessID
	}
	if key == "" {
		key = h.id
	}
	h.key = key
	lane := p.Lane
	if p.ParentLane != "" {
		lane = resolveNestedLane(p.ParentLane)
	}
	h.lane = lane
	seqKey := sessID
	if seqKey == "" {
		seqKey = key
	}
	s.seq = r.seq(seqKey)
	s.window = s.startWindow()

	runCtx, cancel := context.WithCancelCause(ctx)
	h.cancel = cancel
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cancel(nil)
		return nil, ErrClosed
	}
	r.wg.Add(1)
	r.started[h] = struct{}{}
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.started, h)
			r.mu.Unlock()
		}()
		defer cancel(nil)
		res, err := s.execute(runCtx, key, lane, sessID, source, create)
		h.res, h.err = res, err
		h.qmu.Lock()
		h.qdone = true
		h.qcond.Broadcast()
		h.qmu.Unlock()
		close(h.done)
	}()
	return h, nil
}

// Wait waits for the run to end and returns how it ended. The error is
// non-nil only when the run could not get going (a locked session, a bad
// configuration, a wait in a lane cancelled); a failed run is a Result.
func (h *Run) Wait() (Result, error) {
	<-h.done
	return h.res, h.err
}

// Done is closed when the run has ended.
func (h *Run) Done() <-chan struct{} { return h.done }

// Abort stops the run with ErrAborted, queued or running.
func (h *Run) Abort() { h.cancel(ErrAborted) }

// Steer queues text as a user message, injected after the current tool
// batch. It reports false when the message will not be delivered: the run
// is compacting, or its agent loop has stopped taking messages (from
// agent_end on, including between a failed attempt and its retry, and at
// run_end). On an external harness it is delivered to the engine whose
// turn is running where the engine takes messages mid-turn (pi, Claude
// Code), and
// false otherwise.
func (h *Run) Steer(text string) bool { return h.inject(llm.UserText(text), false) }

// FollowUp queues text as a user message for when the agent would stop. It
// reports false when Steer would.
func (h *Run) FollowUp(text string) bool { return h.inject(llm.UserText(text), true) }

func (h *Run) inject(m llm.Message, follow bool) bool {
	select {
	case <-h.done:
		return false
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing && h.external == nil {
		return false
	}
	if h.external != nil {
		return !follow && h.external(m) // an engine's turn has no "when it would stop"
	}
	if h.agent == nil {
		h.pending = append(h.pending, queuedMessage{m, follow})
		return true
	}
	if h.compacting.Load() {
		return false
	}
	if follow {
		h.agent.FollowUp(m)
	} else {
		h.agent.Steer(m)
	}
	return true
}

// current is the agent of the attempt in progress, nil outside attempts.
func (h *Run) current() *agent.Agent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.agent
}

// setClosing marks whether the agent loop has stopped taking messages.
func (h *Run) setClosing(c bool) {
	h.mu.Lock()
	h.closing = c
	h.mu.Unlock()
}

// bind makes a the agent that steering goes to (nil when the attempts are
// over, which also refuses what comes after), handing it what came before.
func (h *Run) bind(a *agent.Agent, compacting *atomic.Bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.agent, h.compacting = a, compacting
	if a == nil {
		h.closing = true
		return
	}
	for _, q := range h.pending {
		if q.follow {
			a.FollowUp(q.msg)
		} else {
			a.Steer(q.msg)
		}
	}
	h.pending = nil
}

// bindExternal makes deliver where steering goes while an external
// engine's turn runs (nil: nowhere, from then on).
func (h *Run) bindExternal(deliver func(llm.Message) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.external = deliver
}

// Events yields the run's events in order, from its first (run_start) to
// its last (run_end), waiting for each; then, if the run could not get
// going, its error. Events are kept until read: call it once, and read to
// the end or break.
func (h *Run) Events() iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			h.qmu.Lock()
			for h.qhead >= len(h.q) && !h.qdone {
				h.qcond.Wait()
			}
			if h.qhead >= len(h.q) {
				h.qmu.Unlock()
				<-h.done
				if h.err != nil {
					yield(Event{}, h.err)
				}
				return
			}
			ev := h.q[h.qhead]
			h.q[h.qhead] = Event{}
			h.qhead++
			h.qmu.Unlock()
			if !yield(ev, nil) {
				return
			}
		}
	}
}

func (h *Run) push(ev Event) {
	h.qmu.Lock()
	if h.qhead == len(h.q) {
		h.q, h.qhead = h.q[:0], 0
	}
	h.q = append(h.q, ev)
	h.qcond.Signal()
	h.qmu.Unlock()
}

// stable copies what an agent event shares with the loop, so that a queued
// event stays valid after the loop goes on: a message_update's streaming
// event (its partial message is dropped, but for the block a tool call
// starts in) and a message_start's partial message.
func stable(ev Event) Event {
	a := ev.Agent
	if a == nil {
		return ev
	}
	c := *a
	switch {
	case c.Type == agent.EventMessageUpdate && c.LLM != nil:
		l := *c.LLM
		l.Partial = nil
		if l.Type == llm.EventToolCallStart && c.LLM.Partial != nil && l.ContentIndex < len(c.LLM.Partial.Content) {
			p := llm.Message{Content: make([]llm.Content, l.ContentIndex+1)}
			p.Content[l.ContentIndex] = c.LLM.Partial.Content[l.ContentIndex]
			l.Partial = &p
		}
		c.LLM = &l
	case c.Type == agent.EventMessageStart && c.Message != nil:
		m := *c.Message
		m.Content = append([]llm.Content(nil), m.Content...)
		c.Message = &m
	}
	ev.Agent = &c
	return ev
}

// newRun is the state of a run of r (nil in tests of its parts).
func newRun(r *Runner, p params, clk clock.Clock) *run {
	h := &Run{id: "run-" + session.NewSessionID(), done: make(chan struct{})}
	h.qcond = sync.NewCond(&h.qmu)
	s := &run{r: r, h: h, p: p, clock: clk, seq: new(atomic.Int64)}
	h.scope = &Scope{s}
	return s
}

// startInfo is the payload of run_start.
func (s *run) startInfo(lane, source string) *RunStart {
	p := &s.p
	st := &RunStart{Cwd: p.Session.Cwd, Lane: resolveGlobalLane(lane), Resumed: source == "resume"}
	if p.Info.ID != "" {
		st.Model = p.Info.Provider + "/" + p.Info.ID
	}
	if reg := p.Tools; reg != nil {
		if p.ToolPolicy != nil {
			if nr, err := p.ToolPolicy.Apply(reg); err == nil {
				reg = nr
			}
		}
		st.Tools = reg.Names()
	}
	return st
}
