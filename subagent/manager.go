package subagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// Defaults of Config.
const (
	DefaultMaxDepth          = 1
	DefaultMaxLivePerSession = 5
	DefaultMaxLivePerRoot    = 20
	// DefaultResultLimit caps a foreground result's text (characters), as
	// the tool-result budget caps any tool's.
	DefaultResultLimit = 50_000
)

// Statuses of a task's end.
const (
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusTimedOut    = "timed_out"
	StatusCancelled   = "cancelled"
	StatusInterrupted = "interrupted"
)

// Custom entry types of a parent's transcript.
const (
	// SpawnedType records a task at its start: SpawnRecord.
	SpawnedType = "subagent_spawned"
	// ResultType records its end, at most once per task: ResultRecord.
	ResultType = "subagent_result"
)

// ErrStopped is the cause a stopped task's run is cancelled with.
var ErrStopped = errors.New("the subagent task was stopped")

// Config is what lives as long as the program: given once, to New.
type Config struct {
	// Runner runs the children (and the follow-up runs of idle parents).
	Runner *runner.Runner
	// Store is the Runner's session store: it holds the parents' and the
	// children's sessions.
	Store session.Store
	// Child is the Request children start from: its model (unless the
	// call or the definition names one), its tools (the agent tools are
	// added by the Manager below the maximum depth), options and budgets.
	// Its Prompt, Session, Lane, Approval and OnEvent are the Manager's.
	// A follow-up run of an idle top-level session starts from it too.
	Child runner.Request
	// Parent is the Request a follow-up run of an idle top-level session
	// starts from (a background result arrived after its run ended): the
	// top-level runs' model, tools (with the agent tools) and approval. Its
	// zero value means Child with the agent tools.
	Parent runner.Request
	// Cwd is the directory the children's sessions belong to.
	Cwd string
	// ResolveModel resolves a "provider/id" that a call or a definition
	// names; nil refuses such calls.
	ResolveModel func(ctx context.Context, spec string) (llm.Model, llm.ModelInfo, error)
	// Definitions are the agent types (LoadDefinitions); nil means the
	// built-in general agent only.
	Definitions []Definition
	// MaxDepth is the deepest a child may be (1: children of top-level
	// sessions only; range 1-5); a child at it is not offered agent.
	// MaxLivePerSession and MaxLivePerRoot cap the running children of one
	// session and of a whole tree. Zero means the defaults.
	MaxDepth, MaxLivePerSession, MaxLivePerRoot int
	// StopBackgroundOnInterrupt stops a session's background children when
	// its run is aborted. The default (false) lets them finish and report:
	// agent_stop is the per-task stop.
	StopBackgroundOnInterrupt bool
	// ResultLimit caps the result text a parent reads; 0 means
	// DefaultResultLimit.
	ResultLimit int
	// OnChildEvent receives the events of every child run, on the child's
	// own stream (the parent's stream has subagent_start and
	// subagent_end); nil drops them. OnFollowUp receives the events of the
	// follow-up runs started for idle parents. Both are called from the
	// runs' goroutines.
	OnChildEvent func(task Task, ev runner.Event)
	OnFollowUp   func(ev runner.Event)
	// OnEnd, when set, is called once per task as it ends, before its
	// delivery, from the task's goroutine: a face shows background tasks
	// there, whose subagent_end is on no stream when the parent is idle.
	OnEnd func(task Task, out Outcome)
	// FollowUp, when set, hands a background result that reached an idle
	// top-level session to the face that owns the session's runs (the
	// gateway queues them): it is called once the result and its
	// notification are in the transcript, with the task's subagent_end
	// (nil when a run's stream had it already: a steer that run did not
	// read), and starts the run that reads them. Nil: the Manager starts
	// that run itself and sends the subagent_end to OnFollowUp first.
	FollowUp func(sessionID string, end *runner.Event)
	// BeforeDeliver, when set, is called when a finished task is about to
	// be delivered (tests kill the process there).
	BeforeDeliver func(taskID string)
}

// Task describes a running or ended task.
type Task struct {
	ID, Agent, Description     string
	ParentSessionID, SessionID string
	ParentToolCallID           string
	Depth                      int
	Background                 bool
}

// Outcome is how a task ended.
type Outcome struct {
	Status string
	// Text is the child's last assistant text (else its last tool result's
	// text, else the reason it failed).
	Text     string
	Usage    llm.Usage
	Duration time.Duration
	Turns    int
	// Stopped lists the descendants a stop stopped first.
	Stopped []string
}

// task is a live task.
type task struct {
	Task
	root   string // the top-level session of the tree
	parent *task  // nil for a child of a top-level session
	run    *runner.Run
	start  time.Time
	done   chan struct{} // closed once the outcome is set and delivered
	out    Outcome

	mu       sync.Mutex
	children []*task
	stopping bool
	stopped  []string
}

// Manager starts and tracks the children of every run it gives tools to.
// It is safe for concurrent use.
type Manager struct {
	cfg  Config
	defs map[string]Definition

	// base is the context of background children and follow-up runs: it
	// outlives the parent's run and ends at Close.
	base   context.Context
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	tasks map[string]*task // live tasks
	// bySession maps a live child's session to its task.
	bySession map[string]*task
	closed    bool
	wg        sync.WaitGroup

	// deliverMu makes a delivery's check and write one step in this
	// process; the session lock makes it one across processes.
	deliverMu sync.Mutex
}

// New returns a Manager for cfg.
func New(cfg Config) (*Manager, error) {
	if cfg.Runner == nil || cfg.Store == nil {
		return nil, errors.New("subagent: Config.Runner and Config.Store are required")
	}
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if cfg.MaxDepth < 1 || cfg.MaxDepth > 5 {
		return nil, fmt.Errorf("subagent: MaxDepth %d is out of range (1-5)", cfg.MaxDepth)
	}
	if cfg.MaxLivePerSession <= 0 {
		cfg.MaxLivePerSession = DefaultMaxLivePerSession
	}
	if cfg.MaxLivePerRoot <= 0 {
		cfg.MaxLivePerRoot = DefaultMaxLivePerRoot
	}
	if cfg.ResultLimit <= 0 {
		cfg.ResultLimit = DefaultResultLimit
	}
	if cfg.Definitions == nil {
		cfg.Definitions = []Definition{General()}
	}
	m := &Manager{cfg: cfg, defs: map[string]Definition{}, tasks: map[string]*task{}, bySession: map[string]*task{}}
	for _, d := range cfg.Definitions {
		m.defs[d.Name] = d
	}
	if _, ok := m.defs[GeneralAgent]; !ok {
		m.defs[GeneralAgent] = General()
	}
	m.base, m.cancel = context.WithCancelCause(context.Background())
	return m, nil
}

// SetParent sets Config.Parent, for a caller whose top-level Request holds
// the Manager's own tools (it is built after the Manager).
func (m *Manager) SetParent(q runner.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.Parent = q
}

// Live lists the running tasks, by id.
func (m *Manager) Live() []Task {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Task, 0, len(m.tasks))
	for _, t := range m.tasks {
		out = append(out, t.Task)
	}
	slices.SortFunc(out, func(a, b Task) int { return compareStr(a.ID, b.ID) })
	return out
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Wait waits until no task is running and no follow-up run is going: what
// a CLI does before it exits, so background results are delivered.
func (m *Manager) Wait() { m.wg.Wait() }

// Close stops every task, the deepest first, and waits for their
// deliveries and follow-up runs.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	var tops []*task
	for _, t := range m.tasks {
		if t.parent == nil {
			tops = append(tops, t)
		}
	}
	m.mu.Unlock()
	for _, t := range tops {
		m.stop(t)
	}
	m.cancel(ErrStopped)
	m.wg.Wait()
	return nil
}

// liveCounts returns the running children of a session and of a tree.
func (m *Manager) liveCounts(sessionID, root string) (perSession, perRoot int) {
	for _, t := range m.tasks {
		if t.ParentSessionID == sessionID {
			perSession++
		}
		if t.root == root {
			perRoot++
		}
	}
	return perSession, perRoot
}

// newTaskID returns "t_" and 12 random hex digits.
func newTaskID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t_" + hex.EncodeToString(b[:])
}

// register adds t to the live tasks, refusing it over a cap. The refusal
// is the text the model reads.
func (m *Manager) register(t *task) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("agents cannot be started: the program is shutting down")
	}
	perSession, perRoot := m.liveCounts(t.ParentSessionID, t.root)
	if perSession >= m.cfg.MaxLivePerSession {
		return fmt.Errorf("this session already has %d running agents (max %d); wait for one to finish", perSession, m.cfg.MaxLivePerSession)
	}
	if perRoot >= m.cfg.MaxLivePerRoot {
		return fmt.Errorf("this session's tree already has %d running agents (max %d); wait for one to finish", perRoot, m.cfg.MaxLivePerRoot)
	}
	m.tasks[t.ID] = t
	if t.parent != nil {
		t.parent.mu.Lock()
		t.parent.children = append(t.parent.children, t)
		t.parent.mu.Unlock()
	}
	return nil
}

func (m *Manager) unregister(t *task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tasks, t.ID)
	if m.bySession[t.SessionID] == t {
		delete(m.bySession, t.SessionID)
	}
	if p := t.parent; p != nil {
		p.mu.Lock()
		p.children = slices.DeleteFunc(p.children, func(c *task) bool { return c == t })
		p.mu.Unlock()
	}
}

// taskOfSession returns the live task whose child session id is.
func (m *Manager) taskOfSession(id string) *task {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bySession[id]
}

func (m *Manager) task(id string) *task {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tasks[id]
}

// Stop stops a task and its descendants, the deepest first, and waits
// until each has delivered its cancelled result. It reports false for a
// task that is not running.
func (m *Manager) Stop(taskID string) (Outcome, bool) {
	t := m.task(taskID)
	if t == nil {
		return Outcome{}, false
	}
	return m.stop(t), true
}

// stop is post-order: t's children are stopped (and have delivered) before
// t's own run is aborted, so no descendant outlives the stop.
func (m *Manager) stop(t *task) Outcome {
	t.mu.Lock()
	t.stopping = true
	children := slices.Clone(t.children)
	t.mu.Unlock()
	var names []string
	for _, c := range children {
		out := m.stop(c)
		names = append(names, c.ID)
		names = append(names, out.Stopped...)
	}
	t.mu.Lock()
	t.stopped = names
	run := t.run
	t.mu.Unlock()
	if run != nil {
		run.Abort()
	} // else agentCall aborts it once it has started
	<-t.done
	return t.out
}

// handle is t's run, nil while it is starting.
func (t *task) handle() *runner.Run {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.run
}

// toolResultText caps s at limit characters, saying how much was left out.
func capText(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return string(r[:limit]) + fmt.Sprintf("\n\n[the result was cut to %d characters of %d]", limit, len(r))
}

// childTools is the registry of a child at depth: the definition's tools
// (or all of the template's), and the agent tools below the maximum depth.
func (m *Manager) childTools(def Definition, depth int) (*tool.Registry, error) {
	var base []tool.Tool
	if r := m.cfg.Child.Tools; r != nil {
		base = r.Tools()
	}
	want := map[string]bool{}
	for _, n := range def.Tools {
		want[toolName(n)] = true
	}
	reg, err := tool.NewRegistry()
	if err != nil {
		return nil, err
	}
	for _, t := range base {
		if isAgentTool(t.Name()) || def.Tools != nil && !want[t.Name()] {
			continue
		}
		if err := reg.Add(t); err != nil {
			return nil, err
		}
	}
	if depth < m.cfg.MaxDepth {
		for _, t := range m.Tools() {
			if def.Tools != nil && !want[t.Name()] && !(want["agent"] && isAgentTool(t.Name())) {
				continue
			}
			if err := reg.Add(t); err != nil {
				return nil, err
			}
		}
	}
	return reg, nil
}

func isAgentTool(name string) bool {
	return name == ToolAgent || name == ToolSend || name == ToolStop
}

// outcomeOf reads how a child run ended.
func outcomeOf(res runner.Result, err error, stopped bool) Outcome {
	out := Outcome{Usage: res.Usage}
	for _, msg := range res.Messages {
		if msg.Role == llm.RoleAssistant {
			out.Turns++
		}
	}
	out.Text = finalText(res.Messages)
	switch {
	case stopped:
		out.Status = StatusCancelled
	case err == nil && res.OK():
		out.Status = StatusCompleted
	case res.Reason == runner.ReasonTimeout:
		out.Status = StatusTimedOut
	case res.Reason == runner.ReasonAborted:
		out.Status = StatusCancelled
	default:
		out.Status = StatusFailed
	}
	if out.Text == "" || out.Status == StatusFailed {
		why := res.Message
		if why == "" && res.Err != nil {
			why = res.Err.Error()
		}
		if why == "" && err != nil {
			why = err.Error()
		}
		if why != "" {
			out.Text = joinLines(out.Text, why)
		}
	}
	return out
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// finalText is the last assistant text of msgs, else the last tool
// result's text.
func finalText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			if t := msgs[i].Text(); t != "" {
				return t
			}
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleToolResult {
			if t := msgs[i].Text(); t != "" {
				return t
			}
		}
	}
	return ""
}
