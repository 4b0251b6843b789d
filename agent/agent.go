package agent

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Defaults of Config.
const (
	DefaultMaxTurns             = 100
	DefaultMaxConcurrentTools   = 10
	DefaultMaxStopContinuations = 3
)

// SteerMode says what a steered message does to a tool batch that is
// running.
type SteerMode string

// The steer modes.
const (
	// SteerWait lets the running batch settle, then injects the message
	// before the next model call (pi's semantics). The default.
	SteerWait SteerMode = "wait"
	// SteerInterrupt cancels the running batch: running calls are aborted
	// and calls not yet started are skipped, each with a result that says
	// so; then the message is injected.
	SteerInterrupt SteerMode = "interrupt"
)

// Config builds an Agent. Only Model is required; zero values mean the
// defaults.
type Config struct {
	Model llm.Model
	// Tools are the tools offered to the model; nil means none.
	Tools *tool.Registry
	// ToolSpecs, when set, is asked before every model call for the tools
	// that call offers (a tool catalog that grows as tools are found);
	// Tools still prepares and runs every call. Nil means Tools.Specs(),
	// built once per run.
	ToolSpecs    func() []llm.ToolSpec
	SystemPrompt string
	// Options are sent with every model call (max tokens, thinking level,
	// session id, ...).
	Options llm.Options
	// Messages is the prior history (a resumed session). It is copied.
	Messages []llm.Message
	// MaxTurns caps the model calls of one run: 0 means DefaultMaxTurns, a
	// negative value means no limit.
	MaxTurns int
	// TransformContext, when set, runs before every model call on the
	// messages about to be sent and returns those to send instead
	// (compaction and repair plug in here). It must not modify msgs in
	// place. An error fails the turn.
	TransformContext func(ctx context.Context, msgs []llm.Message) ([]llm.Message, error)
	// Hooks are the lifecycle seams; all are optional.
	Hooks Hooks

	// DisableStreamingTools turns streaming tool execution off: every call
	// waits for the assistant message to complete, as pi does. Then the
	// calls of a message run in parallel when all are concurrency-safe,
	// otherwise one by one in order.
	DisableStreamingTools bool
	// EarlyExclusive lets calls that are not concurrency-safe start before
	// the message completes (still alone and in order). Off by default:
	// a call that may change things waits until the model has finished
	// asking for it.
	EarlyExclusive bool
	// MaxConcurrentTools caps the calls running at once; 0 means
	// DefaultMaxConcurrentTools.
	MaxConcurrentTools int
	// SteerMode is SteerWait (the default) or SteerInterrupt.
	SteerMode SteerMode
	// CascadeOnFailure decides which failed calls cancel their siblings.
	// Nil means DefaultCascade.
	CascadeOnFailure func(t tool.Tool, call tool.Call) bool
	// MaxStopContinuations bounds how often the Stop hook may keep one run
	// going; 0 means DefaultMaxStopContinuations, negative means never.
	MaxStopContinuations int
	// MaxOutputTokens is the model's output limit (llm.ModelInfo.MaxTokens).
	// When set, a reply cut off at a lower Options.MaxTokens is discarded
	// and asked again once with the limit raised to it (at most
	// EscalatedMaxTokens). 0 means unknown: cut-off replies are continued
	// instead.
	MaxOutputTokens int
	// MaxOutputContinuations bounds the continuation prompts sent after
	// replies cut off at their output limit; 0 means
	// DefaultMaxOutputContinuations, negative means never.
	MaxOutputContinuations int
	// MaxFinalizeRevisions bounds the revisions Hooks.BeforeFinalize may
	// ask for in one run; 0 means DefaultMaxFinalizeRevisions, negative
	// means never.
	MaxFinalizeRevisions int
	// TokenBudget, when positive, is an output-token target for the run:
	// while the run's output is under 90% of it, a run that would stop is
	// told to keep working (until continuing stops paying off).
	TokenBudget int
	// Now stamps the messages the agent creates (Unix ms); nil means the
	// wall clock. Tests set it for deterministic transcripts.
	Now func() int64
}

// Hooks are the function-typed seams around the loop: hook.Seams, the one
// type the hook bus fills (Bus.Seams) and the loop calls, so nobody copies
// one into the other field by field. See hook.Seams for each seam.
type Hooks = hook.Seams

// Cascader is implemented by tools that say whether a failed call cancels
// the calls running beside it and skips the queued ones.
type Cascader interface {
	CascadesOnFailure() bool
}

// DefaultCascade is the default failure-cascade policy: a tool implementing
// Cascader decides; otherwise only the tool named "bash" cascades (a failed
// command usually invalidates what its siblings were doing).
func DefaultCascade(t tool.Tool, call tool.Call) bool {
	if c, ok := t.(Cascader); ok {
		return c.CascadesOnFailure()
	}
	return call.Name == "bash"
}

// Errors the run methods yield before a run starts.
var (
	ErrRunning    = errors.New("agent: a run is already in progress; use Steer or FollowUp to add messages to it")
	ErrNoModel    = errors.New("agent: Config.Model is nil; set a model")
	ErrNoMessages = errors.New("agent: nothing to continue: the conversation is empty; use Run with a prompt")
	ErrAssistant  = errors.New("agent: cannot continue after an assistant message; add a user message with Run, or queue one with Steer or FollowUp")
)

// Agent is one conversation with a model and its tools. Its methods are
// safe for concurrent use; one run at a time.
type Agent struct {
	cfg Config

	mu       sync.Mutex
	messages []llm.Message
	steer    []llm.Message
	follow   []llm.Message
	running  bool
	// interrupt is signalled by Steer in SteerInterrupt mode.
	interrupt chan struct{}

	subs   atomic.Pointer[[]subscriber]
	subMu  sync.Mutex
	nextID int

	// reporter collects the errors hooks report (ReportHookError) while
	// the current run is inside a hook call; nil between runs.
	reporter atomic.Pointer[hookReporter]
}

type subscriber struct {
	id int
	fn func(Event)
}

// New returns an agent for cfg. The configuration is copied.
func New(cfg Config) *Agent {
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.MaxConcurrentTools <= 0 {
		cfg.MaxConcurrentTools = DefaultMaxConcurrentTools
	}
	if cfg.MaxStopContinuations == 0 {
		cfg.MaxStopContinuations = DefaultMaxStopContinuations
	}
	if cfg.MaxOutputContinuations == 0 {
		cfg.MaxOutputContinuations = DefaultMaxOutputContinuations
	}
	if cfg.MaxFinalizeRevisions == 0 {
		cfg.MaxFinalizeRevisions = DefaultMaxFinalizeRevisions
	}
	if cfg.SteerMode == "" {
		cfg.SteerMode = SteerWait
	}
	if cfg.CascadeOnFailure == nil {
		cfg.CascadeOnFailure = DefaultCascade
	}
	if cfg.Now == nil {
		cfg.Now = llm.NowMillis
	}
	a := &Agent{cfg: cfg, interrupt: make(chan struct{}, 1)}
	a.messages = append([]llm.Message(nil), cfg.Messages...)
	return a
}

// Run appends prompts to the conversation and runs the loop until it ends,
// yielding every event; the last is agent_end. How the run ended is in
// agent_end's Reason and Err; the iterator's error is non-nil only when the
// run could not start (ErrRunning, ErrNoModel), and then it is the only
// value yielded. Breaking out of the loop aborts the run: it is wound down
// (tools cancelled, every call given a result) and subscribers still see
// its remaining events.
func (a *Agent) Run(ctx context.Context, prompts ...llm.Message) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if err := a.begin(false); err != nil {
			yield(Event{}, err)
			return
		}
		defer a.finish()
		r := newRun(a, ctx, yield)
		r.loop(prompts, false)
	}
}

// Continue runs the loop from the existing conversation, whose last
// message must not be an assistant message (a retry after an error message
// was removed, or a resumed session ending in tool results). When it is one
// and messages are queued with Steer or FollowUp, those are used as the
// prompt.
func (a *Agent) Continue(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if err := a.begin(true); err != nil {
			yield(Event{}, err)
			return
		}
		defer a.finish()
		var prompts []llm.Message
		a.mu.Lock()
		if n := len(a.messages); n > 0 && a.messages[n-1].Role == llm.RoleAssistant {
			prompts = a.drainLocked(&a.steer)
			if len(prompts) == 0 {
				prompts = a.drainLocked(&a.follow)
			}
		}
		a.mu.Unlock()
		r := newRun(a, ctx, yield)
		r.loop(prompts, true)
	}
}

func (a *Agent) begin(cont bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running {
		return ErrRunning
	}
	if a.cfg.Model == nil {
		return ErrNoModel
	}
	if cont {
		n := len(a.messages)
		if n == 0 {
			return ErrNoMessages
		}
		if a.messages[n-1].Role == llm.RoleAssistant && len(a.steer) == 0 && len(a.follow) == 0 {
			return ErrAssistant
		}
	}
	a.running = true
	select { // a stale interrupt from before this run does not count
	case <-a.interrupt:
	default:
	}
	return nil
}

func (a *Agent) finish() {
	a.reporter.Store(nil)
	a.mu.Lock()
	a.running = false
	a.mu.Unlock()
}

// Subscribe registers fn to see every event of every run, synchronously and
// in order, before the event reaches the Run iterator. All subscribers see
// one total order. fn must not block and must not call Run or Continue;
// Steer, FollowUp and Messages are fine. It returns a function that
// unregisters fn.
func (a *Agent) Subscribe(fn func(Event)) (unsubscribe func()) {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	a.nextID++
	id := a.nextID
	var cur []subscriber
	if p := a.subs.Load(); p != nil {
		cur = *p
	}
	next := append(append([]subscriber(nil), cur...), subscriber{id: id, fn: fn})
	a.subs.Store(&next)
	return func() {
		a.subMu.Lock()
		defer a.subMu.Unlock()
		cur := *a.subs.Load()
		next := make([]subscriber, 0, len(cur))
		for _, s := range cur {
			if s.id != id {
				next = append(next, s)
			}
		}
		a.subs.Store(&next)
	}
}

// Steer queues a message to inject while the agent works: after the
// current tool batch settles (or, in SteerInterrupt mode, at once,
// cancelling the batch), before the next model call. All queued messages
// are injected together. Queued when no run is active, it is used by the
// next run.
func (a *Agent) Steer(msg llm.Message) {
	a.mu.Lock()
	a.steer = append(a.steer, msg)
	running := a.running
	a.mu.Unlock()
	if running && a.cfg.SteerMode == SteerInterrupt {
		select {
		case a.interrupt <- struct{}{}:
		default:
		}
	}
}

// FollowUp queues a message to inject when the agent would otherwise stop
// (after any steering). All queued follow-ups are injected together.
func (a *Agent) FollowUp(msg llm.Message) {
	a.mu.Lock()
	a.follow = append(a.follow, msg)
	a.mu.Unlock()
}

// Messages returns a copy of the whole conversation: prior history, and
// everything the runs added.
func (a *Agent) Messages() []llm.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]llm.Message(nil), a.messages...)
}

// SetMessages replaces the conversation (to drop a failed assistant message
// before a retry, or after compaction). It fails while a run is active.
func (a *Agent) SetMessages(msgs []llm.Message) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running {
		return ErrRunning
	}
	a.messages = append([]llm.Message(nil), msgs...)
	return nil
}

func (a *Agent) drainLocked(q *[]llm.Message) []llm.Message {
	out := *q
	*q = nil
	return out
}

func (a *Agent) drain(q *[]llm.Message) []llm.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.drainLocked(q)
}

func (a *Agent) appendMessage(m llm.Message) {
	a.mu.Lock()
	a.messages = append(a.messages, m)
	a.mu.Unlock()
}

// history returns the conversation as a view that later appends do not
// disturb.
func (a *Agent) history() []llm.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.messages[:len(a.messages):len(a.messages)]
}
