package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

// hookWait bounds the wait for hooks at the end of a run.
const hookWait = 10 * time.Second

// run is the state of one Run call.
type run struct {
	r     *Runner
	p     Params
	clock Clock

	emitMu sync.Mutex

	sess session.Session
	// ids[i] is the entry id of the agent's message i ("" when not stored);
	// leafBefore is the leaf before the last appended message.
	ids        []string
	leafBefore string
	sessErr    bool

	model            *attemptModel
	compacting       atomic.Bool
	attemptCompacted bool
	precheckCounted  bool
	turn             int
	compactions      int
	iterations       int

	usage    llm.Usage
	added    []llm.Message
	cancel   context.CancelCauseFunc
	warnings []string
	// overBudget is the budget a final reply crossed; the run is stopped
	// only if the model is called again.
	overBudget *BudgetError
	// end is the run_end notice, sent last.
	end *Notice
	// lastPrompt is the estimated size of the messages last sent to the
	// model, to tell whether a compaction made them smaller.
	lastPrompt int
	// window is the context window the run works to: the model's, or a
	// smaller one its server was seen to enforce (window.go).
	window int
}

func (s *run) emit(ev agent.Event) {
	if s.p.OnEvent == nil {
		return
	}
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.p.OnEvent(ev)
}

func (s *run) notice(t agent.EventType, n Notice) { s.emit(noticeEvent(t, n)) }

func (s *run) warn(msg string) {
	s.warnings = append(s.warnings, msg)
	s.notice(EventWarning, Notice{Message: msg})
}

// Run runs p: it resolves the session, waits for its lanes, opens the
// session under its write lock, loads hooks and MCP servers, then runs
// attempts until the run succeeds, fails for good, or reaches its iteration
// cap. The error is non-nil only when the run could not start (a locked
// session, a bad configuration, a cancelled wait in a lane); how a started
// run ended is in the Result.
func (r *Runner) Run(ctx context.Context, p Params) (res Result, err error) {
	if p.Model == nil {
		return Result{}, errors.New("runner: Params.Model is nil; resolve a model first (llm/provider)")
	}
	s := &run{r: r, p: p, clock: r.cfg.Clock}
	s.window = s.startWindow()
	// run_end is the last event of a run: it is sent after everything the
	// run's end does (session_end hooks, closing the session), so a client
	// may stop reading at it.
	defer func() {
		if s.end != nil {
			if s.sess != nil && s.end.SessionID == "" {
				s.end.SessionID = s.sess.ID()
			}
			s.notice(EventRunEnd, *s.end)
		}
	}()

	// The session id is resolved before the lanes (they are keyed by it);
	// the lock is taken after them, so runs of one process queue instead
	// of failing on each other's lock.
	store := p.Session.Store
	if store != nil && p.Session.Cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			p.Session.Cwd = wd
			s.p.Session.Cwd = wd
		}
	}
	var sessID, source string
	create := false
	if store != nil {
		switch {
		case p.Session.Fork != "":
			id, err := store.Fork(ctx, p.Session.Fork, "", session.CreateOptions{Cwd: p.Session.Cwd})
			if err != nil {
				return Result{}, fmt.Errorf("fork session %s: %w", p.Session.Fork, err)
			}
			sessID, source = id, "resume"
		case p.Session.ID != "":
			sessID, source = p.Session.ID, "resume"
		case p.Session.Continue:
			info, err := session.Latest(ctx, store, p.Session.Cwd)
			switch {
			case errors.Is(err, session.ErrNotFound):
				s.warn("no earlier session in this directory to continue: starting a new one")
			case err != nil:
				return Result{}, fmt.Errorf("find the latest session: %w", err)
			default:
				sessID, source = info.ID, "resume"
			}
		}
		if sessID == "" {
			sessID, source, create = session.NewSessionID(), "startup", true
		}
	}
	key := p.SessionKey
	if key == "" {
		key = sessID
	}
	if key == "" {
		key = "run-" + session.NewSessionID()
	}
	lane := p.Lane
	if p.ParentLane != "" {
		lane = ResolveNestedLane(p.ParentLane)
	}

	queuedAt := s.clock.Now()
	queued := false
	release, err := r.lanes.Acquire(ctx, key, lane, func(name string, pos int) {
		queued = true
		s.notice(EventLaneWait, Notice{Lane: name, Position: pos,
			Message: fmt.Sprintf("waiting in lane %s (position %d)", name, pos)})
	})
	if err != nil {
		return Result{Reason: ReasonAborted, Err: err}, err
	}
	defer release()
	if queued {
		w := s.clock.Now().Sub(queuedAt)
		s.notice(EventLaneAcquired, Notice{Lane: ResolveGlobalLane(lane), WaitedMs: w.Milliseconds(),
			Message: fmt.Sprintf("started after waiting %s in the queue", roundSec(w))})
	}

	if store != nil {
		var sess session.Session
		if create {
			sess, err = store.Create(ctx, session.CreateOptions{ID: sessID, Cwd: p.Session.Cwd, Lock: p.Session.Lock})
		} else {
			sess, err = store.Open(ctx, sessID, p.Session.Lock)
		}
		if err != nil {
			return Result{Err: err}, err
		}
		s.sess = sess
		if p.Session.Opened != nil {
			path := ""
			if fs, ok := sess.(interface{ Path() string }); ok {
				path = fs.Path()
			}
			p.Session.Opened(sess.ID(), path)
		}
		defer func() {
			if cerr := sess.Close(); cerr != nil && err == nil {
				s.warn(fmt.Sprintf("closing the session: %v", cerr))
				res.Warnings = s.warnings // set below, before this ran
			}
		}()
		if fs, ok := sess.(interface{ Warnings() []string }); ok {
			for _, w := range fs.Warnings() {
				s.warn(w)
			}
		}
	}
	res, err = s.run(ctx, key, source)
	if s.sess != nil {
		res.SessionID = s.sess.ID()
		if fs, ok := s.sess.(interface{ Path() string }); ok {
			res.SessionPath = fs.Path()
		}
	}
	res.Warnings = s.warnings
	return res, err
}

// run is everything after the lanes and the lock.
func (s *run) run(ctx context.Context, key, source string) (Result, error) {
	p := s.p
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.cancel = cancel

	history := p.History
	s.ids = make([]string, len(history))
	sessionID := ""
	transcript := ""
	if s.sess != nil {
		c := s.sess.Context()
		history = c.Messages
		s.ids = append([]string(nil), c.EntryIDs...)
		for len(s.ids) < len(history) {
			s.ids = append(s.ids, "")
		}
		sessionID = s.sess.ID()
		if fs, ok := s.sess.(interface{ Path() string }); ok {
			transcript = fs.Path()
		}
	}

	// Hooks.
	bus := p.Bus
	if p.Hooks != nil {
		lo := *p.Hooks
		lo.SessionID, lo.TranscriptPath = sessionID, transcript
		bo := hook.Options{}
		if lo.BusOptions != nil {
			bo = *lo.BusOptions
		}
		bo.Report = s.reportHook
		lo.BusOptions = &bo
		lo.Bus = bus
		b, warns, err := hook.Load(lo)
		if err != nil {
			return Result{Err: err}, err
		}
		bus = b
		for _, w := range warns {
			s.warn(w)
		}
	}
	if p.RegisterHooks != nil {
		switch {
		case bus == nil:
			bus = hook.New(&hook.Options{Report: s.reportHook})
		case bus == p.Bus:
			// The caller's bus may serve many runs: this run's Go hooks go
			// on a bus derived from it, or every run would add its own to
			// the shared one and they would pile up.
			bus = bus.Derive()
		}
		p.RegisterHooks(bus)
	}
	if bus != nil {
		defer func() {
			wctx, c := context.WithTimeout(context.WithoutCancel(ctx), hookWait)
			defer c()
			if err := bus.Wait(wctx); err != nil {
				s.warn("some hooks were still running when the run ended")
			}
		}()
	}

	// The session's own hooks, then the prompt's, before anything is
	// started for the run: a refused prompt starts no MCP server.
	promptText := p.Prompt
	var promptContext string
	endReason := "other"
	if bus != nil {
		defer func() {
			ectx, c := context.WithTimeout(context.WithoutCancel(ctx), hookWait)
			defer c()
			bus.SessionEnd(ectx, hook.SessionEndEvent{SessionID: sessionID, Reason: endReason})
		}()
		out := bus.SessionStart(runCtx, hook.SessionStartInput{SessionID: sessionID, Source: source})
		if out.Halt != "" {
			return s.finish(Result{Reason: ReasonHalted, Err: &HaltError{out.Halt}, Message: out.Halt}), nil
		}
		ups := bus.UserPromptSubmit(runCtx, hook.UserPromptSubmitInput{SessionID: sessionID, Prompt: p.Prompt})
		if ups.Halt != "" {
			return s.finish(Result{Reason: ReasonHalted, Err: &HaltError{ups.Halt}, Message: ups.Halt}), nil
		}
		if ups.Block {
			msg := ups.Reason
			if msg == "" {
				msg = "a UserPromptSubmit hook refused the prompt"
			}
			return s.finish(Result{Reason: ReasonPromptBlocked, Message: msg, Err: errors.New(msg)}), nil
		}
		promptContext = joinNonEmpty(out.Context, ups.Context)

		// Model hooks: before_model_resolve, then the legacy
		// before_agent_start, whose fields count only where the newer
		// point set none.
		legacy := bus.BeforeAgentStart(runCtx, hook.BeforeAgentStartInput{Prompt: p.Prompt, Messages: history})
		mo := bus.BeforeModelResolve(runCtx, hook.BeforeModelResolveInput{Prompt: p.Prompt, Provider: p.Info.Provider, Model: p.Info.ID}).Under(legacy)
		if (mo.Provider != "" && mo.Provider != p.Info.Provider) || (mo.Model != "" && mo.Model != p.Info.ID) {
			prov, id := orStr(mo.Provider, p.Info.Provider), orStr(mo.Model, p.Info.ID)
			if p.ResolveModel == nil {
				s.warn(fmt.Sprintf("a hook asked for model %s/%s, but this run cannot change models; it stays on %s/%s", prov, id, p.Info.Provider, p.Info.ID))
			} else {
				m, info, err := p.ResolveModel(runCtx, prov, id)
				if err != nil {
					return Result{Err: err}, fmt.Errorf("resolve the model %s/%s a hook asked for: %w", prov, id, err)
				}
				p.Model, p.Info = m, info
				s.p.Model, s.p.Info = m, info
			}
		}
		edit := bus.BeforePromptBuild(runCtx, hook.BeforePromptBuildInput{Prompt: p.Prompt, SystemPrompt: p.SystemPrompt, Messages: history}).Under(legacy.PromptEdit)
		p.SystemPrompt, promptText = edit.Apply(p.SystemPrompt, p.Prompt)
		s.p.SystemPrompt = p.SystemPrompt
	}
	prompt := llm.UserText(promptText)
	if p.Now != nil {
		prompt.Timestamp = p.Now()
	}
	if promptContext != "" {
		prompt.Content = append(prompt.Content, llm.Text(promptContext))
	}
	prompt.Content = append(prompt.Content, p.Images...)

	// Tools, with MCP servers started before the first model call.
	reg := p.Tools
	if p.MCP != nil && len(p.MCP.Config.Servers) > 0 {
		var mo mcp.Options
		if p.MCP.Options != nil {
			mo = *p.MCP.Options
		}
		if mo.Logger == nil {
			// Failures are reported as warnings of the run, below.
			mo.Logger = slog.New(slog.DiscardHandler)
		}
		m, err := mcp.Start(runCtx, p.MCP.Config, &mo)
		if err != nil {
			return Result{Err: err}, fmt.Errorf("start MCP servers: %w", err)
		}
		defer m.Close()
		for _, st := range m.Status() {
			if st.State != mcp.StateReady {
				from := ""
				if st.Source != "" {
					from = " (from " + st.Source + ")"
				}
				s.warn(fmt.Sprintf("MCP server %s%s is not available: %v; its tools are left out", st.Name, from, st.Err))
			}
		}
		var tools []tool.Tool
		if reg != nil {
			tools = reg.Tools()
		}
		tools = append(tools, m.Tools()...)
		nr, err := tool.NewRegistry(tools...)
		if err != nil {
			return Result{Err: err}, fmt.Errorf("add MCP tools: %w", err)
		}
		reg = nr
	}
	if p.ToolPolicy != nil {
		if reg == nil {
			reg, _ = tool.NewRegistry()
		}
		nr, err := p.ToolPolicy.Apply(reg)
		if err != nil {
			return Result{Err: err, Reason: string(llm.ReasonUnknown), Message: err.Error()}, err
		}
		reg = nr
	}
	if p.Approval != nil && p.Approval.ReadOnly == nil && reg != nil {
		p.Approval.ReadOnly = reg.ReadOnly
	}
	var names []string
	var specs []llm.ToolSpec
	if reg != nil {
		names = reg.Names()
		specs = reg.Specs()
	}
	s.model = &attemptModel{model: p.Model}
	var model llm.Model = s.model
	var nameMap *tool.NameMap
	if nm := tool.NewNameMap(names); !nm.Identity() {
		nameMap = nm
		model = &namedModel{Model: model, names: nm}
	}

	// Compaction, recorded into the session.
	var comp Compactor
	if p.Compaction == nil || !p.Compaction.Disabled {
		if p.Compaction != nil && p.Compaction.Compactor != nil {
			comp = p.Compaction.Compactor
		} else {
			window := p.Info.ContextWindow
			if window == 0 {
				window = llm.DefaultContextWindow
			}
			// New guards the declared window; a learned one is set after.
			cc := compact.Config{Window: window, SystemPrompt: p.SystemPrompt, Tools: specs, OnEvent: s.compactEvent, Now: p.Now}
			if p.Compaction != nil {
				cc.Summarizer = p.Compaction.Summarizer
				if sum := cc.Summarizer; sum != nil && sum.Model == nil {
					// The run's own model, as it is when it compacts:
					// after a profile rotation or a fallback, the one
					// that works.
					own := *sum
					own.Model = s.model
					cc.Summarizer = &own
				}
				cc.ReserveTokens = p.Compaction.ReserveTokens
			}
			if s.sess != nil {
				cc.Recorder = &SessionRecorder{Session: s.sess, EntryIDs: func() []string { return s.ids }}
			}
			if bus != nil {
				cc.BeforeCompaction = func(ctx context.Context, st compact.CompactionStart) {
					bus.BeforeCompaction(ctx, hook.CompactionEvent{Trigger: trigger(st.Trigger), Messages: st.Messages, TokensBefore: st.TokensBefore})
				}
				cc.AfterCompaction = func(ctx context.Context, rec compact.CompactionRecord) {
					bus.AfterCompaction(ctx, hook.CompactionEvent{Trigger: trigger(rec.Trigger), TokensBefore: rec.TokensBefore, TokensAfter: rec.TokensAfter, Summary: rec.Summary})
				}
			}
			c, err := compact.New(cc)
			if err != nil {
				return Result{Err: err, Reason: string(llm.ReasonUnknown), Message: err.Error()}, err
			}
			comp = c
			if s.window < window {
				s.setWindow(c, s.window)
			}
		}
	}

	// TransformContext: compaction, then wire names, then the history
	// repair. Compaction comes first because its decisions are indices into
	// the agent's own history, which is what the transcript's entries line
	// up with (the recorder names entries by them); the repair then shapes
	// whatever compaction produced (a summary followed by a user turn, a
	// pruned head) for the provider as the very last step, and it must see
	// wire names because its sanitiser drops names a provider refuses.
	// Calls to tools not offered now stay in the history with their
	// results: a call to a tool that does not exist was answered with an
	// error naming the tools that do, and dropping the pair would hide it
	// from the model, which then makes the same call every turn. Only a
	// run that offers no tools at all drops every call, as a request that
	// carries tool calls but declares no tools is refused (Anthropic).
	var allowed []string
	if names != nil && len(names) == 0 {
		allowed = []string{}
	}
	repair := session.Transform(session.RepairOptions{API: p.Info.API, AllowedTools: allowed, Now: p.Now})
	transform := func(ctx context.Context, msgs []llm.Message) ([]llm.Message, error) {
		if err := s.beforeModelCall(); err != nil {
			return nil, err
		}
		if comp != nil {
			out, err := comp.TransformContext(ctx, msgs)
			if err != nil {
				return nil, err
			}
			msgs = out
		}
		if nameMap != nil {
			msgs = wireMessages(nameMap, msgs)
		}
		out, err := repair(ctx, msgs)
		if err == nil {
			s.lastPrompt = compact.MessagesTokens(out)
		}
		return out, err
	}

	hooks := agent.Hooks{}
	if bus != nil {
		// Field by field: the agent's hooks may grow seams the bus does
		// not have yet.
		sm := bus.Seams(hook.SeamsOptions{Approval: p.Approval, Registry: reg, SessionID: sessionID,
			Halt: func(reason string) { cancel(&HaltError{Reason: reason}) }})
		hooks = agent.Hooks{Approve: sm.Approve, BeforeToolCall: sm.BeforeToolCall, AfterToolCall: sm.AfterToolCall,
			ToolResultPersist: sm.ToolResultPersist, LLMInput: sm.LLMInput, LLMOutput: sm.LLMOutput, AgentEnd: sm.AgentEnd}
		hooks.Stop, hooks.BeforeFinalize = finalizeOnce(bus, sm.Stop)
	} else if ap := p.Approval; ap != nil {
		// Asked in BeforeToolCall, as the bus's seams ask it, so that loop
		// detection (bound in front of it) refuses a looping call before
		// anyone is asked about it.
		hooks.BeforeToolCall = func(ctx context.Context, call tool.Call) (tool.Call, *tool.Result) {
			if ok, reason := ap.Approve(ctx, call); !ok {
				res := tool.ErrorResult(orStr(reason, "Tool call denied by the approval policy."))
				return call, &res
			}
			return call, nil
		}
	}
	if comp != nil {
		next := hooks.ToolResultPersist
		hooks.ToolResultPersist = func(ctx context.Context, call tool.Call, res tool.Result) tool.Result {
			res = comp.PersistToolResult(ctx, call, res)
			if next != nil {
				res = next(ctx, call, res)
			}
			return res
		}
	}
	if p.LoopGuard == nil || !p.LoopGuard.Disabled {
		s.bindLoopGuard(&hooks)
	}

	a := agent.New(agent.Config{Model: model, Tools: reg, SystemPrompt: p.SystemPrompt, Options: p.Options,
		Messages: history, MaxTurns: p.MaxTurns, TransformContext: transform, Hooks: hooks, Now: p.Now,
		MaxOutputTokens: p.Info.MaxTokens})

	s.r.mu.Lock()
	s.r.active[key] = &activeRun{agent: a, cancel: cancel, compacting: &s.compacting}
	s.r.mu.Unlock()
	defer func() {
		s.r.mu.Lock()
		delete(s.r.active, key)
		s.r.mu.Unlock()
	}()

	stopTimer := s.startTimer(cancel)
	defer stopTimer()

	res := s.loop(runCtx, a, comp, prompt)
	if res.Reason == ReasonStop {
		endReason = "exit"
	}
	return s.finish(res), nil
}

func (s *run) finish(res Result) Result {
	res.Usage = s.usage
	if s.p.Info.ID != "" {
		res.Model = s.p.Info.Provider + "/" + s.p.Info.ID
	}
	res.Attempts = s.iterations
	res.Compactions += s.compactions
	res.Messages = s.added
	n := Notice{Reason: res.Reason, StopReason: string(res.StopReason), Attempts: res.Attempts, Message: res.Message}
	if s.sess != nil {
		n.SessionID = s.sess.ID()
	}
	if res.Err != nil {
		n.Error = res.Err.Error()
	}
	s.end = &n // sent by Run once everything else is done
	return res
}

func joinNonEmpty(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += "\n\n"
		}
		out += p
	}
	return out
}

func trigger(t compact.Trigger) string {
	if t == compact.TriggerManual {
		return "manual"
	}
	return "auto"
}

// reportHook routes a hook's notice into the run's events.
func (s *run) reportHook(ctx context.Context, n hook.Notice) {
	if n.Kind == hook.NoticeMessage {
		s.notice(EventHookMessage, Notice{Message: n.Text, Reason: string(n.Point)})
		return
	}
	// Text says which hook and what it printed ("exit status 1" alone
	// would not); Err stays in the chain for errors.Is.
	err := n.Err
	switch {
	case err == nil:
		err = errors.New(n.Text)
	case n.Text != "" && !strings.Contains(n.Text, err.Error()):
		err = fmt.Errorf("%s: %w", n.Text, err)
	case n.Text != "":
		err = textError{text: n.Text, err: err}
	}
	if !agent.ReportHookError(ctx, string(n.Point), err) {
		s.emit(agent.Event{Type: agent.EventHookError, Hook: string(n.Point), Err: err})
	}
}

// textError shows a notice's full text while keeping its error for
// errors.Is and errors.As.
type textError struct {
	text string
	err  error
}

func (e textError) Error() string { return e.text }
func (e textError) Unwrap() error { return e.err }

// bindLoopGuard puts loop detection first among the tool hooks: a call it
// refuses never reaches the user's hooks or the approval question, and its
// warning is appended last, after every rewrite of the result.
func (s *run) bindLoopGuard(h *agent.Hooks) {
	cfg := loopguard.Config{}
	if s.p.LoopGuard != nil {
		cfg = *s.p.LoopGuard
	}
	user := cfg.OnEvent
	cfg.OnEvent = func(ev loopguard.Event) {
		// The event names its call, so a display can show the detection on
		// the call's own line.
		e := noticeEvent(EventLoopDetected, Notice{Reason: string(ev.Kind), Message: fmt.Sprintf("loop detection (%s, %s): %s", ev.Kind, ev.Tool, ev.Detection.Message), Attempt: ev.Detection.Count})
		e.ToolCallID, e.ToolName = ev.CallID, ev.Tool
		s.emit(e)
		if user != nil {
			user(ev)
		}
	}
	g := loopguard.New(&cfg).Hooks(func(err error) { s.cancel(err) })
	before, after, persist := h.BeforeToolCall, h.AfterToolCall, h.ToolResultPersist
	h.BeforeToolCall = func(ctx context.Context, call tool.Call) (tool.Call, *tool.Result) {
		call, res := g.BeforeToolCall(ctx, call)
		if res != nil || before == nil {
			return call, res
		}
		return before(ctx, call)
	}
	h.AfterToolCall = func(ctx context.Context, call tool.Call, res tool.Result) {
		g.AfterToolCall(ctx, call, res)
		if after != nil {
			after(ctx, call, res)
		}
	}
	h.ToolResultPersist = func(ctx context.Context, call tool.Call, res tool.Result) tool.Result {
		if persist != nil {
			res = persist(ctx, call, res)
		}
		return g.ToolResultPersist(ctx, call, res)
	}
}

// finalizeRevisionNudge is the instruction of a before_agent_finalize hook
// that asks for a revision without saying what to change.
const finalizeRevisionNudge = "A before_agent_finalize hook asked you to revise your answer before it is final."

// finalizeOnce binds before_agent_finalize so that it fires exactly once
// each time the run is about to end. The bus's Stop seam asks it already
// when no stop hook keeps the run going; but once the agent's stop
// continuations are spent it no longer calls Stop, and the finalize hooks
// would never hear of the real end. BeforeFinalize asks them then, and
// only then: when the Stop seam just ran and let the run end, they have
// already answered.
func finalizeOnce(bus *hook.Bus, stop func(context.Context, llm.Message) (bool, []llm.Message)) (
	func(context.Context, llm.Message) (bool, []llm.Message), func(context.Context, llm.Message) string) {
	var asked bool // the agent calls both from its loop goroutine
	onStop := func(ctx context.Context, last llm.Message) (bool, []llm.Message) {
		asked = false // stays false if stop panics
		cont, inject := stop(ctx, last)
		asked = !cont
		return cont, inject
	}
	onFinalize := func(ctx context.Context, last llm.Message) string {
		if asked {
			asked = false
			return ""
		}
		out := bus.BeforeAgentFinalize(ctx, hook.BeforeAgentFinalizeInput{Last: last})
		if out.Action != hook.FinalizeContinue && out.Action != hook.FinalizeRevise {
			return ""
		}
		texts := []string{out.Reason}
		for _, m := range out.Messages {
			texts = append(texts, m.Text())
		}
		if t := joinNonEmpty(texts...); t != "" {
			return t
		}
		return finalizeRevisionNudge
	}
	return onStop, onFinalize
}

// startTimer arms the run timeout; it is extended once when it fires during
// a compaction.
func (s *run) startTimer(cancel context.CancelCauseFunc) (stop func()) {
	d := s.p.Timeout
	if d == 0 {
		d = DefaultRunTimeout
	}
	if d < 0 {
		return func() {}
	}
	grace := s.p.CompactionTimeout
	if grace <= 0 {
		grace = DefaultCompactionTimeout
	}
	var mu sync.Mutex
	graceUsed, stopped := false, false
	var stopFn func() bool
	var fire func()
	fire = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if RunTimeoutDuringCompaction(s.compacting.Load(), graceUsed) == TimeoutExtend {
			graceUsed = true
			stopFn = s.clock.AfterFunc(grace, fire)
			s.notice(EventTimeoutExtended, Notice{DelayMs: grace.Milliseconds(),
				Message: fmt.Sprintf("the run timeout came during a compaction: extended once by %s", roundSec(grace))})
			return
		}
		cancel(ErrRunTimeout)
	}
	mu.Lock()
	stopFn = s.clock.AfterFunc(d, fire)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		stopFn()
	}
}

// compactEvent forwards a Compactor event into the run's stream.
func (s *run) compactEvent(ev compact.Event) {
	switch ev.Type {
	case compact.EventCompactionStart:
		s.compacting.Store(true)
	case compact.EventCompactionEnd, compact.EventFallback:
		s.compacting.Store(false)
		if ev.Type == compact.EventCompactionEnd && ev.Err == nil {
			s.attemptCompacted = true
			s.compactions++
		}
	case compact.EventTruncation:
		if !s.precheckCounted && s.turn <= 1 && (ev.Route == compact.RouteTruncate || len(ev.Records) > 0 && ev.Records[0].Reason != "cap") {
			// The precheck shortened or cleared tool results instead of
			// sending a prompt over budget (OpenClaw's truncation-only
			// route): the call goes ahead on the shortened context, which
			// counts as a fresh attempt, not a failure. Like OpenClaw's
			// precheck, only the one before an attempt's first call counts:
			// the cap bounds recoveries, not the turns of a long run.
			s.precheckCounted = true
			s.iterations++
			s.notice(EventPrecheckTruncation, Notice{Reason: string(ev.Route), Attempt: ev.Truncated,
				Message: fmt.Sprintf("the prompt was over budget: shortened %d tool results instead of compacting", ev.Truncated)})
		}
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	s.emit(agent.Event{Type: agent.EventType(ev.Type), Data: data})
}

// onAgentEvent persists what an attempt produced and forwards its events.
func (s *run) onAgentEvent(ctx context.Context, ev agent.Event) {
	switch ev.Type {
	case agent.EventMessageEnd:
		if ev.Message != nil {
			m := *ev.Message
			s.added = append(s.added, m)
			s.store(ctx, m)
			if m.Role == llm.RoleAssistant && m.Usage != nil {
				s.usage.Add(*m.Usage)
				s.checkBudget(finalReply(m))
			}
		}
	case agent.EventRetryReset:
		// A reply cut off at its output limit, withdrawn and asked again:
		// it never reaches message_end, but it was paid for.
		if ev.Usage != nil {
			s.usage.Add(*ev.Usage)
			s.checkBudget(false)
		}
	case agent.EventTurnStart:
		s.precheckCounted, s.turn = false, ev.Turn
	case agent.EventTurnEnd:
		if s.sess != nil {
			if err := s.sess.EndTurn(); err != nil {
				s.sessionError(err)
			}
		}
	}
	s.emit(ev)
}

func (s *run) store(ctx context.Context, m llm.Message) {
	if s.sess == nil {
		s.ids = append(s.ids, "")
		return
	}
	s.leafBefore = s.sess.Leaf()
	id, err := s.sess.Append(context.WithoutCancel(ctx), session.MessageEntry(m))
	if err != nil {
		s.sessionError(err)
	}
	s.ids = append(s.ids, id)
}

func (s *run) sessionError(err error) {
	if s.sessErr {
		return
	}
	s.sessErr = true
	s.warn(fmt.Sprintf("the transcript could not be written: %v", err))
}

// checkBudget stops the run once it has crossed a budget. A final reply
// (the answer, with no tool call) that crosses it is kept and the run ends
// normally, with a warning: the money is spent and the answer is there.
// Only if something would call the model again (a Stop hook, a follow-up)
// is the run stopped, before that call (see beforeModelCall).
func (s *run) checkBudget(final bool) {
	var be *BudgetError
	if s.p.MaxCost > 0 && s.usage.Cost.Total > s.p.MaxCost {
		be = &BudgetError{Kind: ReasonBudgetCost, Limit: s.p.MaxCost, Used: s.usage.Cost.Total}
	} else if s.p.MaxTokens > 0 {
		u := s.usage
		if used := u.Input + u.Output + u.CacheRead + u.CacheWrite; used > s.p.MaxTokens {
			be = &BudgetError{Kind: ReasonBudgetTokens, Limit: float64(s.p.MaxTokens), Used: float64(used)}
		}
	}
	switch {
	case be == nil:
	case final:
		if s.overBudget == nil {
			s.overBudget = be
			s.warn(be.Error() + " with its final reply; the reply is kept")
		}
	default:
		s.cancel(be)
	}
}

// beforeModelCall stops a run that crossed a budget with what looked like
// its final reply, when something asks the model for more anyway.
func (s *run) beforeModelCall() error {
	if s.overBudget != nil {
		s.cancel(s.overBudget)
		return s.overBudget
	}
	return nil
}

// finalReply reports whether m ends the run as far as the model is
// concerned: a complete answer that calls no tool.
func finalReply(m llm.Message) bool {
	return m.StopReason == llm.StopReasonStop && len(m.ToolCalls()) == 0
}

// jitter is the default source of backoff jitter.
func jitter() float64 { return rand.Float64() }

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
