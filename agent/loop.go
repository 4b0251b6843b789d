package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// run is the state of one Run or Continue.
type run struct {
	a       *Agent
	cfg     *Config
	ctx     context.Context // cancelled when the consumer breaks off
	cancel  context.CancelFunc
	hookCtx context.Context // the ctx hooks are called with
	yield   func(Event, error) bool
	stopped bool // the Run iterator's consumer is gone

	turn      int
	added     []llm.Message
	usage     llm.Usage
	last      llm.Message // the last assistant message
	stopConts int

	// The stop chain's state (stopchain.go).
	escalated       bool // a cut-off reply was asked again with a raised limit
	raisedMaxTokens int  // that limit, used for the rest of the run
	outputConts     int
	revisions       int
	budgetConts     int
	budgetMark      int // output tokens at the last budget continuation

	reporter *hookReporter
	specs    []llm.ToolSpec // the tools as offered to the model, built once per run
}

func newRun(a *Agent, ctx context.Context, yield func(Event, error) bool) *run {
	ctx, cancel := context.WithCancel(ctx)
	r := &run{a: a, cfg: &a.cfg, ctx: ctx, cancel: cancel, yield: yield, reporter: &hookReporter{}}
	r.hookCtx = ctx
	a.reporter.Store(r.reporter)
	return r
}

// emit delivers ev to the subscribers, then to the iterator's consumer.
// Only the loop's goroutine calls it, so there is one total order.
func (r *run) emit(ev Event) {
	if p := r.a.subs.Load(); p != nil {
		for _, s := range *p {
			s.fn(ev)
		}
	}
	if !r.stopped && !r.yield(ev, nil) {
		r.stopped = true
		r.cancel()
	}
}

// addMessage records a message the run injects (prompts, steering,
// follow-ups, tool results).
func (r *run) addMessage(m llm.Message) {
	if m.Timestamp == 0 {
		m.Timestamp = r.cfg.Now()
	}
	r.emit(Event{Type: EventMessageStart, Turn: r.turn, Message: &m})
	r.a.appendMessage(m)
	r.added = append(r.added, m)
	r.emit(Event{Type: EventMessageEnd, Turn: r.turn, Message: &m})
}

// loop is the outer loop: turns while the model calls tools or messages
// are queued; then follow-ups and the stop hook decide whether to go on.
// cont makes the first turn happen without prompts (Continue).
func (r *run) loop(prompts []llm.Message, cont bool) {
	defer r.cancel()
	r.emit(Event{Type: EventAgentStart})
	if r.ctx.Err() != nil {
		r.end(ReasonAborted, llm.StopReasonAborted, r.ctx.Err())
		return
	}
	pending := append(append([]llm.Message(nil), prompts...), r.a.drain(&r.a.steer)...)
	wantTools := cont
	for {
		for wantTools || len(pending) > 0 {
			if err := r.ctx.Err(); err != nil {
				r.end(ReasonAborted, llm.StopReasonAborted, err)
				return
			}
			if r.cfg.MaxTurns > 0 && r.turn >= r.cfg.MaxTurns {
				r.end(ReasonMaxTurns, r.last.StopReason, nil)
				return
			}
			r.turn++
			r.emit(Event{Type: EventTurnStart, Turn: r.turn})
			for _, m := range pending {
				r.addMessage(m)
			}
			pending = nil
			out := r.runTurn()
			r.last = out.assistant
			if u := out.assistant.Usage; u != nil {
				r.usage.Add(*u)
			}
			r.emit(Event{Type: EventTurnEnd, Turn: r.turn, Message: &out.assistant,
				ToolResults: out.results, StopReason: out.assistant.StopReason})
			if out.assistant.StopReason.Failed() {
				if out.assistant.StopReason == llm.StopReasonAborted || r.ctx.Err() != nil {
					r.end(ReasonAborted, llm.StopReasonAborted, orErr(out.err, r.ctx.Err()))
				} else {
					r.end(ReasonError, llm.StopReasonError, out.err)
				}
				return
			}
			if out.reset { // a cut-off reply withdrawn: ask again
				wantTools = true
				pending = r.a.drain(&r.a.steer)
				continue
			}
			wantTools = out.calls > 0
			pending = r.a.drain(&r.a.steer)
			if !wantTools && len(pending) == 0 {
				pending = r.cutOffContinuation(out)
			}
		}
		// Steering that arrived after the last turn's check, then follow-ups.
		if pending = r.a.drain(&r.a.steer); len(pending) > 0 {
			continue
		}
		if pending = r.a.drain(&r.a.follow); len(pending) > 0 {
			continue
		}
		if pending = r.wouldStop(); len(pending) > 0 {
			continue
		}
		r.end(ReasonStop, r.last.StopReason, nil)
		return
	}
}

func orErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// end finishes the run: the AgentEnd hook, then agent_end.
func (r *run) end(reason string, stop llm.StopReason, err error) {
	if r.cfg.Hooks.AgentEnd != nil {
		added := append([]llm.Message(nil), r.added...)
		r.callHook("agent_end", func() { r.cfg.Hooks.AgentEnd(r.hookCtx, added) })
	}
	if reason == ReasonAborted {
		// A run cancelled with a cause (a loop-guard breaker, a budget, a
		// hook's halt) reports that cause rather than a bare "canceled".
		if cause := context.Cause(r.ctx); cause != nil && !errors.Is(cause, context.Canceled) || err == nil {
			err = cause
		}
	}
	usage := r.usage
	r.emit(Event{Type: EventAgentEnd, StopReason: stop, Reason: reason, Usage: &usage, Err: err, Messages: r.added})
}

// callHook runs f, turning a panic into a hook_error event; it reports
// whether f returned normally. Errors reported with Agent.ReportHookError
// while it runs are emitted after it returns.
func (r *run) callHook(name string, f func()) (ok bool) {
	r.reporter.enter()
	defer func() {
		r.reporter.leave()
		if p := recover(); p != nil {
			r.reporter.add(name, fmt.Errorf("hook %s panicked: %v", name, p))
			ok = false
		}
		for _, he := range r.reporter.take() {
			r.emit(Event{Type: EventHookError, Turn: r.turn, Hook: he.hook, Err: he.err})
		}
	}()
	f()
	return true
}

type hookErr struct {
	hook string
	err  error
}

// hookReporter collects the errors hooks report during a call.
type hookReporter struct {
	mu    sync.Mutex
	depth int // hook calls in progress
	errs  []hookErr
}

func (h *hookReporter) enter() { h.mu.Lock(); h.depth++; h.mu.Unlock() }
func (h *hookReporter) leave() { h.mu.Lock(); h.depth--; h.mu.Unlock() }

// addInCall adds err when a hook call is in progress.
func (h *hookReporter) addInCall(hook string, err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.depth == 0 {
		return false
	}
	h.errs = append(h.errs, hookErr{hook, err})
	return true
}

func (h *hookReporter) add(hook string, err error) {
	h.mu.Lock()
	h.errs = append(h.errs, hookErr{hook, err})
	h.mu.Unlock()
}

func (h *hookReporter) take() []hookErr {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.errs
	h.errs = nil
	return out
}

// ReportHookError reports a hook's own failure (a shell hook that exited
// badly, a timeout) as a hook_error event of the run, emitted in the loop's
// order right after the hook call in progress returns. It does nothing and
// returns false when no hook call of a run is in progress: the caller then
// reports the error itself. The error never stops the run.
func (a *Agent) ReportHookError(hook string, err error) bool {
	h := a.reporter.Load()
	if h == nil || err == nil {
		return false
	}
	return h.addInCall(hook, err)
}

// errStreamEnded is the error of a stream that closed without a final
// event.
var errStreamEnded = errors.New("the model's stream ended without a final event")
