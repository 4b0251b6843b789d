package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

// Reason codes of a Result besides the agent's (stop, max_turns, aborted)
// and the failure reasons of llm.Reason (context_overflow, overloaded, ...).
const (
	ReasonStop          = agent.ReasonStop
	ReasonMaxTurns      = agent.ReasonMaxTurns
	ReasonAborted       = agent.ReasonAborted
	ReasonRetryLimit    = "retry_limit"
	ReasonTimeout       = "timeout"
	ReasonBudgetCost    = "budget_cost"
	ReasonBudgetTokens  = "budget_tokens"
	ReasonLoopDetected  = "loop_detected"
	ReasonHalted        = "halted"
	ReasonPromptBlocked = "prompt_blocked"
)

// Errors a run is cancelled with; context.Cause on the run's context and
// Result.Err carry them.
var (
	// ErrRunTimeout: the run took longer than Params.Timeout.
	ErrRunTimeout = errors.New("the run took longer than its timeout")
	// ErrAborted: Runner.Abort stopped the run.
	ErrAborted = errors.New("the run was aborted")
	// ErrBudget is matched by every *BudgetError.
	ErrBudget = errors.New("the run's budget was exceeded")
)

// BudgetError says which budget a run crossed.
type BudgetError struct {
	// Kind is ReasonBudgetCost or ReasonBudgetTokens.
	Kind  string
	Limit float64
	Used  float64
}

// Error says what the run used, its budget and the flag that set it.
func (e *BudgetError) Error() string {
	if e.Kind == ReasonBudgetCost {
		return fmt.Sprintf("the run cost $%.4f, over its budget of $%.4f (--max-cost)", e.Used, e.Limit)
	}
	return fmt.Sprintf("the run used %.0f tokens, over its budget of %.0f (--max-tokens)", e.Used, e.Limit)
}

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// HaltError is a hook's request to end the run (Claude Code's
// "continue": false); Reason is for the user.
type HaltError struct{ Reason string }

// Error says that a hook stopped the run, and why when it said.
func (e *HaltError) Error() string {
	if e.Reason == "" {
		return "a hook stopped the run"
	}
	return "a hook stopped the run: " + e.Reason
}

// Clock is the runner's time source: backoff waits and the run timeout.
// Tests run the real clock inside a testing/synctest bubble, or inject one.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, returning ctx's cause then.
	Sleep(ctx context.Context, d time.Duration) error
	// AfterFunc calls f after d; stop cancels it.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// RealClock is the Clock of the time package.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d on a timer, or until ctx ends.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Config configures a Runner. The zero value (or nil) means the defaults.
type Config struct {
	// LaneCaps are the global lanes' caps; nil means DefaultLaneCaps.
	LaneCaps map[string]int
	// Clock is the time source; nil means RealClock.
	Clock Clock
	// Retry is the default retry policy of runs that set none.
	Retry RetryPolicy
}

// Runner runs agent runs through lanes and keeps the registry of active
// runs. It is safe for concurrent use.
type Runner struct {
	cfg   Config
	lanes *Lanes

	mu     sync.Mutex
	active map[string]*activeRun

	// cooldowns keeps the auth profiles' failures of runs that have no
	// Params.Auth, in memory, by package auth's rules.
	cooldowns *auth.Store
}

type activeRun struct {
	agent      *agent.Agent
	cancel     context.CancelCauseFunc
	compacting *atomic.Bool
}

// New returns a Runner; cfg is copied and may be nil.
func New(cfg *Config) *Runner {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Clock == nil {
		c.Clock = RealClock{}
	}
	mem, _ := auth.Open(&auth.Config{InMemory: true, Now: c.Clock.Now}) // in memory, it cannot fail
	return &Runner{cfg: c, lanes: NewLanes(c.LaneCaps), active: map[string]*activeRun{}, cooldowns: mem}
}

// Default is the Runner behind the package-level Run, Steer, Abort and Active.
var Default = New(nil)

// Run runs p on the Default runner.
func Run(ctx context.Context, p Params) (Result, error) { return Default.Run(ctx, p) }

// Steer injects text into the active run of sessionKey on the Default runner.
func Steer(sessionKey, text string) bool { return Default.Steer(sessionKey, text) }

// Abort stops the active run of sessionKey on the Default runner.
func Abort(sessionKey string) bool { return Default.Abort(sessionKey) }

// Active lists the session keys with an active run on the Default runner.
func Active() []string { return Default.Active() }

// Steer queues text as a user message for the active run of sessionKey,
// injected after its current tool batch. It reports false when no run of
// that session is active or the run is compacting.
func (r *Runner) Steer(sessionKey, text string) bool {
	r.mu.Lock()
	ar := r.active[sessionKey]
	r.mu.Unlock()
	if ar == nil || ar.compacting.Load() {
		return false
	}
	ar.agent.Steer(llm.UserText(text))
	return true
}

// Abort cancels the active run of sessionKey with ErrAborted. It reports
// false when no run of that session is active.
func (r *Runner) Abort(sessionKey string) bool {
	r.mu.Lock()
	ar := r.active[sessionKey]
	r.mu.Unlock()
	if ar == nil {
		return false
	}
	ar.cancel(ErrAborted)
	return true
}

// Active lists the session keys of the runs in progress, sorted.
func (r *Runner) Active() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.active))
	for k := range r.active {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// SessionSpec says which session a run uses. With a nil Store the run is
// not persisted.
type SessionSpec struct {
	Store session.Store
	// ID opens an existing session (an id, a unique prefix, or a file path
	// for the JSONL store).
	ID string
	// Continue opens the latest session of Cwd (a new one when it has none).
	Continue bool
	// Fork copies session Fork into a new session and runs on the copy.
	Fork string
	// Cwd is the working directory sessions belong to; "" means the
	// process's.
	Cwd string
	// Lock says whether to wait for a session held by another run; nil
	// fails fast.
	Lock *session.LockOptions
	// Opened, when set, is called once the session is open, before the
	// first model call, with its id and its transcript's path ("" for a
	// store without files): a caller keeps per-session files (bash's
	// spill logs) beside the transcript.
	Opened func(id, path string)
}

// MCPSpec is the MCP servers of a run.
type MCPSpec struct {
	Config  mcp.Config
	Options *mcp.Options
}

// Compactor is what the runner needs of context compaction;
// *compact.Compactor implements it.
type Compactor interface {
	TransformContext(ctx context.Context, msgs []llm.Message) ([]llm.Message, error)
	PersistToolResult(ctx context.Context, call tool.Call, res tool.Result) tool.Result
	Recover(ctx context.Context, msgs []llm.Message) ([]llm.Message, error)
}

// CompactionSpec configures compaction. Nil means on, with no summariser
// (pruning instead).
type CompactionSpec struct {
	Disabled bool
	// Summarizer writes the summaries; nil prunes instead. A Summarizer
	// with a nil Model uses the run's own model as it is at the time: after
	// an auth-profile rotation or a model fallback, the one the run is on.
	Summarizer    *compact.Summarizer
	ReserveTokens int
	// Compactor replaces the one the runner would build (tests).
	Compactor Compactor
}

// Params are one run.
type Params struct {
	// Prompt is the user's message.
	Prompt string
	// Images are attached to the user's message after its text (image
	// blocks: the files a prompt's @ includes named).
	Images []llm.Content
	// History is the prior conversation of a run without a session store
	// (a session's own context is used otherwise).
	History []llm.Message
	// SessionKey names the run's session lane; "" means the session id.
	SessionKey string
	// Lane is the global lane (main, subagent, cron, nested); "" is main.
	// ParentLane, when set, marks a run started from inside a run on that
	// lane: it runs on ResolveNestedLane(ParentLane) instead.
	Lane, ParentLane string
	Session          SessionSpec

	// Model and Info are the resolved model (llm/provider resolves specs).
	Model llm.Model
	Info  llm.ModelInfo
	// ResolveModel, when set, resolves the model a before_model_resolve
	// (or before_agent_start) hook asks for instead, and the fallbacks.
	ResolveModel func(ctx context.Context, provider, model string) (llm.Model, llm.ModelInfo, error)
	// FallbackModels ("provider/id") are tried in order, through
	// ResolveModel, when the model cannot serve the run: its retries are
	// exhausted, its credentials are refused on every profile, or it does
	// not exist. A context overflow never falls back.
	FallbackModels []string
	// Tools are the caller's tools; MCP tools are added to a copy.
	Tools *tool.Registry
	// ToolPolicy, when set, decides which tools the run offers, over
	// every source at once: Tools and the tools of the MCP servers,
	// filtered once they are started (so --tools can name an MCP tool and
	// --no-tools or a read-only policy leaves out MCP tools too). Nil
	// offers them all.
	ToolPolicy   *tool.Policy
	SystemPrompt string
	Options      llm.Options
	// MaxTurns caps model calls per attempt (agent.Config.MaxTurns).
	MaxTurns int
	// Approval decides tool calls (after the before_tool_call hooks).
	// When its ReadOnly is nil, the run sets it to the ReadOnly of the
	// run's final registry (MCP tools included), so a call that may change
	// things is asked about whichever source its tool comes from.
	Approval *tool.Approval

	// Hooks loads command hooks once the session is known (SessionID,
	// TranscriptPath and BusOptions.Report are filled in, so hook notices
	// become events of the run). RegisterHooks then adds Go hooks to the
	// run's bus. Bus is a bus the caller made, which may be shared by many
	// runs: it is never changed, since command hooks and RegisterHooks go
	// on a bus derived from it for this run (hook.Bus.Derive), and the
	// notices of its hooks go where its own Options.Report sends them.
	Hooks         *hook.LoadOptions
	RegisterHooks func(*hook.Bus)
	Bus           *hook.Bus
	MCP           *MCPSpec
	// Compaction configures the context budget; LoopGuard the tool-loop
	// detection (nil: on, defaults; Disabled turns it off).
	Compaction *CompactionSpec
	LoopGuard  *loopguard.Config

	// Timeout bounds the run (0: DefaultRunTimeout; negative: none),
	// extended once by CompactionTimeout (0: DefaultCompactionTimeout) when
	// it expires during a compaction.
	Timeout, CompactionTimeout time.Duration
	// MaxCost (USD) and MaxTokens stop the run when crossed; 0 means none.
	MaxCost   float64
	MaxTokens int
	// AuthProfiles are the provider's auth profiles in the order to try
	// them, the first being the one Model uses ("" names the ambient key).
	// With UseProfile set, a failure of the credentials (auth, billing, a
	// rate limit) switches to the next profile that is not cooling down,
	// and a profile that failed rests (auth.Cooldown). UseProfile returns
	// the model on another profile.
	AuthProfiles []string
	UseProfile   func(ctx context.Context, profile string) (llm.Model, llm.ModelInfo, error)
	// Auth keeps the profiles' failures and cooldowns in the state file
	// every process of the user shares (package auth); nil keeps them in
	// the Runner's memory, by the same rules, for its own runs only.
	Auth *auth.Store
	// Windows remembers the context windows servers were seen to enforce
	// (an *auth.Store keeps them in the state file); nil remembers them
	// for this run only. See LearnedWindows.
	Windows LearnedWindows
	// Profiles is the number of auth profiles when AuthProfiles is not
	// given (the iteration cap grows with it); 0 means 1. MaxIterations
	// overrides the cap.
	Profiles      int
	MaxIterations int
	// Retry overrides the runner's retry policy.
	Retry *RetryPolicy

	// OnEvent receives every event of the run in one total order: the
	// runner's, the attempts' and compaction's. It must not block.
	OnEvent func(agent.Event)
	// Now stamps messages (Unix ms); nil means the wall clock.
	Now func() int64
}

// Result is how a run ended.
type Result struct {
	// Reason is the reason code: stop, max_turns, aborted, a failure
	// reason (context_overflow, overloaded, auth, ...), retry_limit,
	// timeout, budget_cost, budget_tokens, loop_detected, halted or
	// prompt_blocked. Only stop is a success.
	Reason     string
	StopReason llm.StopReason
	// Err is the cause of a failed run; Message says it for people.
	Err     error
	Message string
	// Usage sums every model call of every attempt.
	Usage llm.Usage
	// Attempts counts the iterations of the outer loop; Retries and
	// Compactions the recoveries among them.
	Attempts    int
	Retries     int
	Compactions int
	// Model is the model that ran last, as provider/id.
	Model string
	// SessionID and SessionPath name the transcript ("" without one).
	SessionID, SessionPath string
	// Messages are the messages the run added, failed attempts excluded.
	Messages []llm.Message
	// Warnings are things the user should know (also sent as events).
	Warnings []string
}

// OK reports whether the run succeeded.
func (r Result) OK() bool { return r.Reason == ReasonStop }
