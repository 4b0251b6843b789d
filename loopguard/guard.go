package loopguard

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Action is what the caller must do with a call.
type Action int

// The actions of a Verdict.
const (
	// Allow runs the call as usual.
	Allow Action = iota
	// Warn runs the call; the warning is appended to its result (Annotate
	// does it) so the model can change course.
	Warn
	// Block does not run the call; Verdict.Result is its result.
	Block
	// Stop does not run the call and stops the run: Verdict.Result is the
	// call's result, Verdict.Err the *StopError to cancel the run with.
	Stop
)

// String returns the action's name.
func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Warn:
		return "warn"
	case Block:
		return "block"
	case Stop:
		return "stop"
	}
	return "unknown"
}

// Verdict is the guard's decision on one call.
type Verdict struct {
	Action    Action
	Detection Detection
	// Result is, for Block and Stop, the error result the model gets in
	// place of running the call.
	Result *tool.Result
	// Err is, for Stop, a *StopError (errors.Is(err, ErrCircuitBreaker)).
	Err error
}

// EventKind says what an Event reports.
type EventKind string

// The event kinds.
const (
	EventWarning EventKind = "warning"
	EventBlock   EventKind = "block"
	EventStop    EventKind = "stop"
)

// Event reports a warning, a block or a stop to Config.OnEvent.
type Event struct {
	Kind      EventKind
	CallID    string
	Tool      string
	Args      json.RawMessage
	Detection Detection
}

// ErrCircuitBreaker is matched (errors.Is) by every *StopError.
var ErrCircuitBreaker = errors.New("loopguard: the global circuit breaker stopped the run")

// StopError is why the global circuit breaker stopped a run. Cancel the
// run's context with it (context.CancelCauseFunc) and read it back with
// context.Cause; errors.Is(err, ErrCircuitBreaker) is true.
type StopError struct {
	Tool  string
	Count int
	// Message is the text the model was given for the refused call.
	Message string
}

// Error says which tool looped and how often.
func (e *StopError) Error() string {
	return "loopguard: run stopped: " + e.Message
}

// Is reports whether target is ErrCircuitBreaker.
func (e *StopError) Is(target error) bool { return target == ErrCircuitBreaker }

// Guard detects tool-call loops over the calls of one session (or run). It
// is safe for concurrent use. Call Before when a call is about to run and
// After with its result; Annotate adds a pending warning to the result the
// model will see. Hooks binds the three to an agent.
type Guard struct {
	onEvent func(Event)
	mu      sync.Mutex
	h       *History
	// warnings holds the warning for calls that were allowed with one,
	// until Annotate takes it.
	warnings map[string]string
	// blocked holds calls refused by Before whose result After must not
	// record a second time.
	blocked map[string]bool
	// hashes holds the identity Before computed for each call, for After.
	hashes map[string]string
}

// maxPending bounds the calls waiting for Annotate or After, for callers
// that never make those calls.
const maxPending = 1024

// New returns a guard with cfg (nil means the defaults: on, 10/20/30).
func New(cfg *Config) *Guard {
	h := NewHistory(cfg)
	return &Guard{onEvent: h.cfg.OnEvent, h: h, warnings: map[string]string{}, blocked: map[string]bool{},
		hashes: map[string]string{}}
}

// callKey identifies a call among the pending ones: its id, or its
// identity when the provider gave none.
func callKey(call tool.Call) string {
	if call.ID != "" {
		return call.ID
	}
	return "\x00" + HashCall(call.Name, call.Args)
}

// Before checks call, records it (blocked calls too) and returns what to
// do with it.
func (g *Guard) Before(call tool.Call) Verdict {
	g.mu.Lock()
	if g.h.cfg.Disabled {
		g.mu.Unlock()
		return Verdict{}
	}
	hash := HashCall(call.Name, call.Args)
	d := g.h.detect(call.Name, call.Args, hash)
	v, kind := verdict(call, d)
	if v.Action == Warn {
		g.warn(callKey(call), d.Message)
	}
	refused := v.Action == Block || v.Action == Stop
	if refused {
		res := tool.ErrorResult(d.Message)
		res.Details = detailsOf(d)
		v.Result = &res
		if len(g.blocked) >= maxPending {
			clear(g.blocked) // After is not being called; do not grow
		}
		g.blocked[callKey(call)] = true
	}
	g.h.record(call.ID, call.Name, hash, refused)
	if !refused {
		if len(g.hashes) >= maxPending {
			clear(g.hashes)
		}
		g.hashes[callKey(call)] = hash
	}
	on := g.onEvent
	g.mu.Unlock()
	if kind != "" && on != nil {
		on(Event{Kind: kind, CallID: call.ID, Tool: call.Name, Args: call.Args, Detection: d})
	}
	return v
}

// verdict turns a detection into the action on call and the event that
// reports it ("" for none).
func verdict(call tool.Call, d Detection) (Verdict, EventKind) {
	v := Verdict{Detection: d}
	switch {
	case !d.Stuck:
		return v, ""
	case d.Level == LevelWarning:
		v.Action = Warn
		return v, EventWarning
	case d.Detector == DetectorGlobal:
		v.Action = Stop
		v.Err = &StopError{Tool: call.Name, Count: d.Count, Message: d.Message}
		return v, EventStop
	}
	v.Action = Block
	return v, EventBlock
}

// warn keeps msg for Annotate to append to the result of the call k.
func (g *Guard) warn(k, msg string) {
	if len(g.warnings) >= maxPending {
		clear(g.warnings) // Annotate is not being called; do not grow
	}
	g.warnings[k] = msg
}

func detailsOf(d Detection) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"loopguard": map[string]any{
		"level": d.Level, "detector": d.Detector, "count": d.Count, "key": d.Key}})
	return b
}

// After records the outcome of call. Results of calls Before refused are
// ignored (they are recorded as blocked already).
//
// A call Before never saw (one the agent answered itself: a tool that
// does not exist, arguments that do not validate) is checked here, as
// Before would have checked it, before it is recorded: a model that keeps
// calling a tool that is not there is warned, and stopped by the breaker,
// like any other. Its warning or refusal text is appended by Annotate (the
// call did not run either way); the returned Verdict says what was found,
// and for Stop carries the *StopError.
func (g *Guard) After(call tool.Call, res tool.Result) Verdict { return g.after(call, res, true) }

// after is After; check false records a call Before never saw without
// checking it (the run is over: its calls are being answered as aborted).
func (g *Guard) after(call tool.Call, res tool.Result, check bool) Verdict {
	g.mu.Lock()
	if g.h.cfg.Disabled {
		g.mu.Unlock()
		return Verdict{}
	}
	k := callKey(call)
	if g.blocked[k] {
		delete(g.blocked, k)
		g.mu.Unlock()
		return Verdict{}
	}
	hash, ok := g.hashes[k]
	delete(g.hashes, k)
	var v Verdict
	var kind EventKind
	if !ok {
		hash = HashCall(call.Name, call.Args)
	}
	if !ok && check {
		v, kind = verdict(call, g.h.detect(call.Name, call.Args, hash))
		if kind != "" {
			g.warn(k, v.Detection.Message) // the call did not run: say why beside its result
		}
	}
	g.h.recordOutcome(call.ID, call.Name, hash, OutcomeHash(call.Name, call.Args, res))
	on := g.onEvent
	g.mu.Unlock()
	if kind != "" && on != nil {
		on(Event{Kind: kind, CallID: call.ID, Tool: call.Name, Args: call.Args, Detection: v.Detection})
	}
	return v
}

// Annotate returns res with the warning Before gave call appended as a
// text block, and forgets the warning; without one it returns res
// unchanged. The content slice is copied, never modified in place.
func (g *Guard) Annotate(call tool.Call, res tool.Result) tool.Result {
	g.mu.Lock()
	k := callKey(call)
	w, ok := g.warnings[k]
	delete(g.warnings, k)
	g.mu.Unlock()
	if !ok {
		return res
	}
	content := make([]llm.Content, 0, len(res.Content)+1)
	content = append(content, res.Content...)
	res.Content = append(content, llm.Text(w))
	return res
}

// Records returns a copy of the remembered calls, oldest first.
func (g *Guard) Records() []Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.h.Records()
}

// Stats summarises the remembered calls.
func (g *Guard) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.h.Stats()
}

// Reset forgets every call, for a guard reused across sessions.
func (g *Guard) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.h.records = nil
	clear(g.warnings)
	clear(g.blocked)
	clear(g.hashes)
}

// Hooks are functions with the signatures of the agent package's
// BeforeToolCall, AfterToolCall and ToolResultPersist hooks. loopguard
// does not import agent; the caller assigns them:
//
//	h := guard.Hooks(cancel) // cancel: the run's context.CancelCauseFunc
//	cfg.Hooks.BeforeToolCall = h.BeforeToolCall
//	cfg.Hooks.AfterToolCall = h.AfterToolCall
//	cfg.Hooks.ToolResultPersist = h.ToolResultPersist
type Hooks struct {
	// BeforeToolCall blocks refused calls with their error result and,
	// when the breaker trips, also calls stop with the *StopError.
	BeforeToolCall func(ctx context.Context, call tool.Call) (tool.Call, *tool.Result)
	// AfterToolCall records the outcome; for a call BeforeToolCall never
	// saw (an unknown tool) it also calls stop when the breaker trips.
	AfterToolCall func(ctx context.Context, call tool.Call, res tool.Result)
	// ToolResultPersist appends the pending warning (Annotate).
	ToolResultPersist func(ctx context.Context, call tool.Call, res tool.Result) tool.Result
}

// Hooks returns the guard as agent hooks. stop is called with a
// *StopError when the global circuit breaker trips; pass the run's
// context.CancelCauseFunc so the run ends and context.Cause(ctx) says why.
// A nil stop only blocks the call.
func (g *Guard) Hooks(stop func(error)) Hooks {
	return Hooks{
		BeforeToolCall: func(_ context.Context, call tool.Call) (tool.Call, *tool.Result) {
			v := g.Before(call)
			if v.Action == Stop && stop != nil {
				stop(v.Err)
			}
			return call, v.Result
		},
		AfterToolCall: func(ctx context.Context, call tool.Call, res tool.Result) {
			if v := g.after(call, res, ctx.Err() == nil); v.Action == Stop && stop != nil {
				stop(v.Err)
			}
		},
		ToolResultPersist: func(_ context.Context, call tool.Call, res tool.Result) tool.Result {
			return g.Annotate(call, res)
		},
	}
}
