package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
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
	// ErrRunTimeout: the run took longer than Request.Timeout.
	ErrRunTimeout = errors.New("the run took longer than its timeout")
	// ErrAborted: Runner.Abort stopped the run.
	ErrAborted = errors.New("the run was aborted")
	// ErrBudget is matched by every *BudgetError.
	ErrBudget = errors.New("the run's budget was exceeded")
	// ErrClosed is returned by Start after Close.
	ErrClosed = errors.New("runner: the Runner is closed")
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

// Config is what lives as long as the program: it is given once, to New,
// and every run of the Runner shares it. The zero value means the
// defaults: runs are not persisted, hooks and MCP servers are not loaded.
type Config struct {
	// Store keeps the runs' sessions; nil runs without a transcript.
	Store session.Store
	// ResolveModel, when set, resolves the model a before_model_resolve
	// (or before_agent_start) hook asks for instead, and the fallbacks of
	// Request.FallbackModels.
	ResolveModel func(ctx context.Context, provider, model string) (llm.Model, llm.ModelInfo, error)
	// Auth keeps the auth profiles' failures and cooldowns in the state
	// file every process of the user shares (package auth); nil keeps them
	// in the Runner's memory, by the same rules, for its own runs only.
	Auth *auth.Store
	// Windows remembers the context windows servers were seen to enforce
	// (an *auth.Store keeps them in the state file); nil remembers them
	// for each run only. See LearnedWindows.
	Windows LearnedWindows
	// Hooks loads command hooks once a run's session is known (SessionID,
	// TranscriptPath and BusOptions.Report are filled in per run, so hook
	// notices become events of the run). RegisterHooks then adds Go hooks
	// to the run's bus. Bus is a bus the caller made: it is never changed,
	// since command hooks and RegisterHooks go on a bus derived from it for
	// each run (hook.Bus.Derive).
	Hooks         *hook.LoadOptions
	RegisterHooks func(*hook.Bus)
	Bus           *hook.Bus
	// ToolSources give every run tools besides its own: each is started
	// for the run before its first model call (after the prompt's hooks,
	// so a refused prompt starts nothing) and closed at its end. MCP
	// servers are one (package tool/mcp, mcp.Source).
	ToolSources []tool.Source
	// ToolSearch decides when runs offer the tool sources' tools through
	// tool_search instead of describing each in every request (nil: auto,
	// at DefaultToolSearchPercent of the window). A Request may override it.
	ToolSearch *ToolSearch
	// Compaction configures the context budget; LoopGuard the tool-loop
	// detection (nil: on, defaults; Disabled turns it off).
	Compaction *CompactionSpec
	LoopGuard  *loopguard.Config
	// LaneCaps are the global lanes' caps; nil means DefaultLaneCaps.
	LaneCaps map[string]int
	// Clock is the time source; nil means clock.Real. Now stamps messages
	// (Unix ms); nil means the wall clock.
	Clock clock.Clock
	Now   func() int64
	// Retry is the retry policy of runs whose Request sets none.
	Retry RetryPolicy
}

// Runner starts runs and keeps what they share: lanes, the registry of
// active runs, the sessions' event sequence and the in-memory auth
// cooldowns. Nothing of it is package-level, so two Runners in one process
// share nothing. It is safe for concurrent use.
type Runner struct {
	cfg   Config
	lanes *lanes

	mu     sync.Mutex
	active map[string]*Run
	// started holds every run from Start to its end, queued ones too.
	started map[*Run]struct{}
	// seqs is the last seq of each session's events (by session id, or by
	// the run key of a run without a session), so seq grows by one across
	// all the runs of a session.
	seqs   map[string]*atomic.Int64
	closed bool
	wg     sync.WaitGroup

	// cooldowns keeps the auth profiles' failures of runs when Config.Auth
	// is nil, in memory, by package auth's rules.
	cooldowns *auth.Store
}

// New returns a Runner for cfg, which it copies.
func New(cfg Config) (*Runner, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	mem, err := auth.Open(&auth.Config{InMemory: true, Clock: cfg.Clock})
	if err != nil {
		return nil, fmt.Errorf("runner: in-memory auth state: %w", err)
	}
	return &Runner{cfg: cfg, lanes: newLanes(cfg.LaneCaps), active: map[string]*Run{}, started: map[*Run]struct{}{}, seqs: map[string]*atomic.Int64{}, cooldowns: mem}, nil
}

// Close aborts the runs in progress (queued ones too) and waits for them to end, with what
// they started (tool sources such as MCP servers, timers, hooks). Start fails after it.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	runs := make([]*Run, 0, len(r.started))
	for run := range r.started {
		runs = append(runs, run)
	}
	r.mu.Unlock()
	for _, run := range runs {
		run.Abort()
	}
	r.wg.Wait()
	return nil
}

// Active lists the runs in progress, by session key.
func (r *Runner) Active() []*Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	runs := make([]*Run, 0, len(r.active))
	for _, run := range r.active {
		runs = append(runs, run)
	}
	slices.SortFunc(runs, func(a, b *Run) int { return strings.Compare(a.key, b.key) })
	return runs
}

// seq returns the event counter of a session.
func (r *Runner) seq(key string) *atomic.Int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.seqs[key]
	if c == nil {
		c = new(atomic.Int64)
		r.seqs[key] = c
	}
	return c
}

// SessionSpec says which session a run uses, in Config.Store. With no
// store the run is not persisted.
type SessionSpec struct {
	// ID opens an existing session (an id, a unique prefix, or a file path
	// for the JSONL store).
	ID string
	// New creates the session ID instead of opening it: a caller that
	// named a session before its first run (a server; an editor's ACP
	// session/new, which gets its id at once while the transcript exists
	// only from the first prompt on).
	New bool
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
	// Subagent, for a new session, records in its header whose child it is
	// (package subagent).
	Subagent *session.Subagent
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

// params are everything one run is made of: its Request and the Runner's
// Config, merged by Start.
type params struct {
	Store            session.Store
	Prompt           string
	Images           []llm.Content
	History          []llm.Message
	SessionKey       string
	Lane, ParentLane string
	Session          SessionSpec

	Model          llm.Model
	Info           llm.ModelInfo
	ResolveModel   func(ctx context.Context, provider, model string) (llm.Model, llm.ModelInfo, error)
	FallbackModels []string
	Tools          *tool.Registry
	ToolPolicy     *tool.Policy
	SystemPrompt   string
	Options        llm.Options
	MaxTurns       int
	Approval       *tool.Approval
	Resume         bool

	Hooks         *hook.LoadOptions
	RegisterHooks func(*hook.Bus)
	Bus           *hook.Bus
	ToolSources   []tool.Source
	ToolSearch    *ToolSearch
	Compaction    *CompactionSpec
	LoopGuard     *loopguard.Config

	Timeout, CompactionTimeout time.Duration
	MaxCost                    float64
	MaxTokens                  int
	AuthProfiles               []string
	UseProfile                 func(ctx context.Context, profile string) (llm.Model, llm.ModelInfo, error)
	Auth                       *auth.Store
	Windows                    LearnedWindows
	Profiles                   int
	MaxIterations              int
	Retry                      *RetryPolicy

	OnEvent         func(Event)
	OnEventOnly     bool
	Now             func() int64
	Harness         harness.Harness
	HarnessFallback bool
	BeforeTool      func(ctx context.Context, call tool.Call, readOnly bool, sc *Scope) error
}

// Request is one run: what it says, where it goes, and what it may
// spend. What every run shares is in Config.
type Request struct {
	// Prompt is the user's message.
	Prompt string
	// Resume runs from the session's context as it is, with no new prompt
	// (Prompt is ignored) and no user_prompt_submit hook: its last message
	// is one the caller appended, such as a subagent's notification
	// delivered to an idle session.
	Resume bool
	// Images are attached to the user's message after its text (image
	// blocks: the files a prompt's @ includes named).
	Images []llm.Content
	// History is the prior conversation of a run without a session store
	// (a session's own context is used otherwise).
	History []llm.Message
	// Session picks the session: new (the zero value), an id, the latest
	// of a directory, or a fork.
	Session SessionSpec
	// SessionKey names the run's session lane; "" means the session id.
	// Lane is the global lane (main, subagent, cron, nested); "" is main.
	// ParentLane, when set, marks a run started from inside a run on that
	// lane: it runs on resolveNestedLane(ParentLane) instead.
	SessionKey, Lane, ParentLane string

	// Model and Info are the resolved model (llm/provider resolves specs).
	Model llm.Model
	Info  llm.ModelInfo
	// FallbackModels ("provider/id") are tried in order, through
	// Config.ResolveModel, when the model cannot serve the run: its
	// retries are exhausted, its credentials are refused on every profile,
	// or it does not exist. A context overflow never falls back.
	FallbackModels []string
	// Options are the model call's options (thinking, output limit).
	Options llm.Options
	// AuthProfiles are the provider's auth profiles in the order to try
	// them, the first being the one Model uses ("" names the ambient key).
	// With UseProfile set, a failure of the credentials (auth, billing, a
	// rate limit) switches to the next profile that is not cooling down.
	AuthProfiles []string
	UseProfile   func(ctx context.Context, profile string) (llm.Model, llm.ModelInfo, error)

	// Tools are the run's own tools; those of Config.ToolSources are added
	// to a copy. ToolPolicy, when set, decides which tools the run offers over
	// every source at once, once they are started. Approval decides tool
	// calls (after the before_tool_call hooks); with a nil ReadOnly it is
	// given the ReadOnly of the run's final registry.
	Tools        *tool.Registry
	ToolPolicy   *tool.Policy
	Approval     *tool.Approval
	SystemPrompt string
	// ToolSearch, when set, overrides Config.ToolSearch for this run.
	ToolSearch *ToolSearch

	// MaxTurns caps model calls per attempt (agent.Config.MaxTurns).
	MaxTurns int
	// Timeout bounds the run (0: DefaultRunTimeout; negative: none),
	// extended once by CompactionTimeout (0: DefaultCompactionTimeout) when
	// it expires during a compaction.
	Timeout, CompactionTimeout time.Duration
	// MaxCost (USD) and MaxTokens stop the run when crossed; 0 means none.
	MaxCost   float64
	MaxTokens int
	// Profiles is the number of auth profiles when AuthProfiles is not
	// given (the iteration cap grows with it); MaxIterations overrides the
	// cap. Retry overrides Config.Retry.
	Profiles, MaxIterations int
	Retry                   *RetryPolicy

	// BeforeTool, when set, is called just before each tool call runs
	// (after its approval and the before_tool_call hooks), with whether
	// the call only reads and the run's Scope: a caller records that a
	// call that may change things has started (package cluster's
	// tool_started entry, fenced). An error refuses the call, which gets
	// the error as its result.
	BeforeTool func(ctx context.Context, call tool.Call, readOnly bool, sc *Scope) error

	// OnEvent, when set, receives every event of the run in one total
	// order, synchronously: it must not block. Run.Events hands out the
	// same events to a reader that may.
	OnEvent func(Event)
	// OnEventOnly says a run from Start hands its events to OnEvent only:
	// it keeps no copy for Run.Events (which then yields only a start
	// error). A server that fans events out from OnEvent and never reads
	// Events sets it, or every event of a long run stays in memory until
	// the run is dropped.
	OnEventOnly bool

	// Harness, when set and not the built-in one, runs the turn on an
	// external engine (package harness: Claude Code, pi, an ACP agent),
	// mirrored into the session. A session bound to a harness (a
	// harness_binding entry) runs only on that harness. HarnessFallback
	// lets a turn whose harness failed before any model work (a
	// harness.PreflightError: the engine is not installed, it cannot start)
	// run on the built-in loop instead, with a warning (auto selection).
	Harness         harness.Harness
	HarnessFallback bool
}

// params merges a Request with the Runner's Config.
func (r *Runner) params(q Request) params {
	c := r.cfg
	return params{
		Store: c.Store, Prompt: q.Prompt, Images: q.Images, History: q.History, SessionKey: q.SessionKey, Lane: q.Lane,
		ParentLane: q.ParentLane, Session: q.Session, Model: q.Model, Info: q.Info, ResolveModel: c.ResolveModel,
		FallbackModels: q.FallbackModels, Tools: q.Tools, ToolPolicy: q.ToolPolicy, SystemPrompt: q.SystemPrompt,
		Options: q.Options, MaxTurns: q.MaxTurns, Approval: q.Approval, Resume: q.Resume, Hooks: c.Hooks, RegisterHooks: c.RegisterHooks,
		Bus: c.Bus, ToolSources: c.ToolSources, ToolSearch: q.ToolSearch, Compaction: c.Compaction, LoopGuard: c.LoopGuard, Timeout: q.Timeout,
		CompactionTimeout: q.CompactionTimeout, MaxCost: q.MaxCost, MaxTokens: q.MaxTokens,
		AuthProfiles: q.AuthProfiles, UseProfile: q.UseProfile, Auth: c.Auth, Windows: c.Windows,
		Profiles: q.Profiles, MaxIterations: q.MaxIterations, Retry: q.Retry, OnEvent: q.OnEvent, OnEventOnly: q.OnEventOnly, Now: c.Now,
		Harness: q.Harness, HarnessFallback: q.HarnessFallback, BeforeTool: q.BeforeTool,
	}
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
