package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// hookWait bounds the wait for hooks at the end of a run.
const hookWait = 10 * time.Second

// run is the state of one run.
type run struct {
	r     *Runner
	h     *Run
	p     params
	clock clock.Clock

	emitMu sync.Mutex
	seq    *atomic.Int64
	// endSent is set once run_end is out: nothing comes after it.
	endSent bool

	// sess is set once the session is open and cleared when it is closed,
	// under sessMu for the readers outside the run (Scope).
	sessMu sync.Mutex
	sess   session.Session
	bus    *hook.Bus
	// tr mirrors the agent's history in the session.
	tr transcript

	model            *attemptModel
	compacting       atomic.Bool
	attemptCompacted bool
	precheckCounted  bool
	turn             int
	compactions      int
	iterations       int

	usage    llm.Usage
	cancel   context.CancelCauseFunc
	warnings []string
	// overBudget is the budget a final reply crossed; the run is stopped
	// only if the model is called again.
	overBudget *BudgetError
	// lastPrompt is the estimated size of the messages last sent to the
	// model, to tell whether a compaction made them smaller.
	lastPrompt int
	// window is the context window the run works to: the model's, or a
	// smaller one its server was seen to enforce (window.go).
	window int

	// reg holds every tool of the run; catalog, when set, offers part of
	// them through tool_search (toolsearch.go). refreshers are the tool
	// sources whose tools can change mid-run; sourced are their tools
	// before the policy.
	reg        *tool.Registry
	catalog    *tool.Catalog
	refreshers []tool.Refresher
	sourced    []tool.Tool
	// names maps the run's tool names to wire-safe ones (names.go).
	names *wireNames
}

// emit stamps ev with the run's envelope and hands it out: to
// Request.OnEvent, and to Run.Events' queue.
func (s *run) emit(ev Event) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.emitLocked(ev)
}

func (s *run) emitLocked(ev Event) {
	if ev.Type == EventRunEnd {
		s.endSent = true
	}
	ev.Seq = s.seq.Add(1)
	ev.RunID, ev.SessionID = s.h.id, s.h.sessionID
	if s.p.OnEvent != nil {
		s.p.OnEvent(ev)
	}
	if s.h.queued {
		s.h.push(stable(ev))
	}
}

// emitAgent forwards an agent event. Without a reader (no OnEvent, not
// started by Start) it only counts it: the event is not copied to the heap.
func (s *run) emitAgent(ev agent.Event) {
	if s.p.OnEvent == nil && !s.h.queued {
		s.seq.Add(1)
		return
	}
	s.emitAgentCopy(ev)
}

func (s *run) emitAgentCopy(ev agent.Event) { s.emit(Event{Type: ev.Type, Agent: &ev}) }

func (s *run) notice(t agent.EventType, n Notice) { s.emit(Event{Type: t, Notice: &n}) }

func (s *run) warn(msg string) {
	s.warnings = append(s.warnings, msg)
	s.notice(EventWarning, Notice{Message: msg})
}

// execute is a started run: the lanes, the session under its write lock,
// then attempts until the run succeeds, fails for good, or reaches its
// iteration cap. The error is non-nil only when the run could not get
// going (a locked session, a bad configuration, a cancelled wait in a
// lane); how a going run ended is in the Result.
func (s *run) execute(ctx context.Context, key, lane, sessID, source string, create bool) (res Result, err error) {
	p := s.p
	r := s.r
	// run_end is the last event of a run: it is sent after everything the
	// run's end does (session_end hooks, closing the session), so a client
	// may stop reading at it.
	defer func() {
		if res.Reason == "" && err != nil && ctx.Err() != nil {
			// Stopped before an attempt began (Abort while the session
			// was being opened): the run was aborted, whatever the
			// store's error says.
			res.Reason, res.Message = ReasonAborted, "the run was aborted"
		}
		end := res
		if end.Err == nil && err != nil {
			end.Err = err
			if end.Reason == "" {
				end.Reason = string(llm.ReasonOf(err))
			}
		}
		s.emit(Event{Type: EventRunEnd, End: &end})
	}()
	s.emit(Event{Type: EventRunStart, Start: s.startInfo(lane, source)})
	// A warning of the session's resolution comes after run_start.
	for _, w := range s.warnings {
		s.notice(EventWarning, Notice{Message: w})
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
		s.notice(EventLaneAcquired, Notice{Lane: resolveGlobalLane(lane), Waited: w,
			Message: fmt.Sprintf("started after waiting %s in the queue", roundSec(w))})
	}

	if store := p.Store; store != nil {
		var sess session.Session
		if create {
			sess, err = store.Create(ctx, session.CreateOptions{ID: sessID, Cwd: p.Session.Cwd, Lock: p.Session.Lock, Subagent: p.Session.Subagent})
		} else {
			sess, err = store.Open(ctx, sessID, p.Session.Lock)
		}
		if err != nil {
			return Result{Err: err}, err
		}
		s.sessMu.Lock()
		s.sess = sess
		s.sessMu.Unlock()
		if p.Session.Opened != nil {
			path := ""
			if fs, ok := sess.(interface{ Path() string }); ok {
				path = fs.Path()
			}
			p.Session.Opened(sess.ID(), path)
		}
		defer func() {
			s.sessMu.Lock()
			s.sess = nil
			s.sessMu.Unlock()
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
	if sess := s.scope().session(); sess != nil {
		res.SessionID = sess.ID()
		if fs, ok := sess.(interface{ Path() string }); ok {
			res.SessionPath = fs.Path()
		}
	}
	res.Warnings = s.warnings
	return res, err
}

// run is everything after the lanes and the lock.
func (s *run) run(ctx context.Context, key, source string) (Result, error) {
	p := s.p
	runCtx, cancel := context.WithCancelCause(context.WithValue(ctx, scopeKey{}, s.h.scope))
	defer cancel(nil)
	s.cancel = cancel

	s.tr.sess, s.tr.warn = s.sess, s.warn
	history := s.tr.begin(p.History)
	if l := p.Options.Thinking; s.sess != nil && l != "" && l != s.tr.thinking {
		// The session remembers the level, for the run that resumes it.
		s.tr.record(runCtx, session.ThinkingLevelEntry(l))
	}
	sessionID := ""
	transcript := ""
	if s.sess != nil {
		sessionID = s.sess.ID()
		if fs, ok := s.sess.(interface{ Path() string }); ok {
			transcript = fs.Path()
		}
	}

	bus, err := s.bindBus(sessionID, transcript)
	if err != nil {
		return Result{Err: err}, err
	}
	s.sessMu.Lock()
	s.bus = bus
	s.sessMu.Unlock()
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
		var ups hook.UserPromptSubmitOutput
		if !p.Resume { // a delivered notification is no prompt of the user's
			ups = bus.UserPromptSubmit(runCtx, hook.UserPromptSubmitInput{SessionID: sessionID, Prompt: p.Prompt})
		}
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

	// Tools, with the sources (MCP servers) started before the first
	// model call.
	reg, closeSources, err := s.startTools(runCtx, p.Tools)
	if err != nil {
		return Result{Err: err}, err
	}
	defer closeSources()
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
	s.reg = reg
	if s.catalog, err = s.newCatalog(reg, history); err != nil {
		return Result{Err: err, Reason: string(llm.ReasonUnknown), Message: err.Error()}, err
	}
	if len(p.ToolSources) > 0 {
		// run_start came before the sources started (a refused prompt
		// starts none): say once what the run offers now.
		all := []string{}
		if reg != nil {
			all = reg.Names()
		}
		msg := fmt.Sprintf("%d tools ready", len(all))
		if s.catalog != nil {
			msg += fmt.Sprintf(" (tool search on: %d offered, %d more through %s)", len(s.catalog.Specs()), s.catalog.Len(), tool.SearchToolName)
		}
		s.notice(EventToolsReady, Notice{Tools: all, Message: msg})
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
	var toolSpecs func() []llm.ToolSpec
	if s.catalog != nil || len(s.refreshers) > 0 {
		toolSpecs = s.offeredSpecs
		specs = s.offeredSpecs()
	}
	if err := s.checkToolsFit(specs); err != nil {
		reason := llm.ReasonContextOverflow
		if te := (*ToolsOverflowError)(nil); errors.As(err, &te) && te.Limit > 0 {
			reason = llm.ReasonFormat // the provider would refuse the request's form
		}
		return s.finish(Result{Err: err, Reason: string(reason), Message: err.Error()}), err
	}

	s.model = &attemptModel{model: p.Model}
	var model llm.Model = s.model
	s.names = &wireNames{}
	s.names.set(names)
	if s.names.get() != nil || len(s.refreshers) > 0 {
		model = &namedModel{Model: model, names: s.names}
	}

	if s.external() {
		// The engine owns its loop, its context and its compaction; the
		// core keeps the transcript, the tools, the approvals and the
		// retry decision. Steering reaches it only where the engine
		// takes messages mid-turn (harness.Attempt.SetSteer).
		s.h.bind(nil, nil)
		deactivate, stopTimer := s.activate(key), s.startTimer(cancel)
		var seams *agent.Hooks
		if bus != nil {
			// The engine's calls that pass through our approval meet the
			// same PreToolUse/PostToolUse hooks as a built-in call.
			h := bus.Seams(hook.SeamsOptions{Approval: p.Approval, Registry: reg, SessionID: sessionID,
				Halt: func(reason string) { cancel(&HaltError{Reason: reason}) }})
			seams = &h
		}
		res, pre := s.runHarness(runCtx, reg, prompt, history, seams)
		deactivate()
		stopTimer()
		if pre == nil || !p.HarnessFallback {
			if res.Reason == ReasonStop {
				endReason = "exit"
			}
			return s.finish(res), nil
		}
		// Nothing ran yet: the turn goes to the built-in loop.
		s.warn(fmt.Sprintf("%v; running the turn on the built-in agent loop", pre))
	}
	// Compaction, recorded into the session.
	comp, err := s.newCompactor(bus, specs)
	if err != nil {
		return Result{Err: err, Reason: string(llm.ReasonUnknown), Message: err.Error()}, err
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
		s.refreshTools(ctx)
		if rs, ok := comp.(requestSetter); ok && toolSpecs != nil {
			// Found and added tools grow the request: the budget
			// counts the tools this call offers, not the first call's.
			rs.SetRequest(p.SystemPrompt, toolSpecs())
		}
		if comp != nil {
			out, err := comp.TransformContext(ctx, msgs)
			if err != nil {
				return nil, err
			}
			msgs = out
		}
		if nm := s.names.get(); nm != nil {
			msgs = wireMessages(nm, msgs)
		}
		out, err := repair(ctx, msgs)
		if err == nil {
			s.lastPrompt = compact.MessagesTokens(out)
		}
		return out, err
	}

	hooks := agent.Hooks{}
	if bus != nil {
		hooks = bus.Seams(hook.SeamsOptions{Approval: p.Approval, Registry: reg, SessionID: sessionID,
			Halt: func(reason string) { cancel(&HaltError{Reason: reason}) }})
		hooks.Stop, hooks.BeforeFinalize = finalizeOnce(bus, hooks.Stop)
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
	if bt := p.BeforeTool; bt != nil {
		next := hooks.BeforeToolCall
		hooks.BeforeToolCall = func(ctx context.Context, call tool.Call) (tool.Call, *tool.Result) {
			if next != nil {
				c, res := next(ctx, call)
				if res != nil {
					return c, res
				}
				call = c
			}
			if err := bt(ctx, call, reg != nil && reg.ReadOnly(call), s.h.scope); err != nil {
				res := tool.ErrorResult("The call was not run: " + err.Error())
				return call, &res
			}
			return call, nil
		}
	}

	a := agent.New(agent.Config{Model: model, Tools: reg, ToolSpecs: toolSpecs, SystemPrompt: p.SystemPrompt, Options: p.Options,
		Messages: history, MaxTurns: p.MaxTurns, TransformContext: transform, Hooks: hooks, Now: p.Now,
		MaxOutputTokens: p.Info.MaxTokens})

	s.h.bind(a, &s.compacting)
	defer s.activate(key)()

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
	res.Messages = s.tr.added
	return res
}

// onAgentEvent persists what an attempt produced and forwards its events.
func (s *run) onAgentEvent(ctx context.Context, ev agent.Event) {
	switch ev.Type {
	case agent.EventMessageEnd:
		if ev.Message != nil {
			m := *ev.Message
			s.tr.add(ctx, m)
			if m.Role == llm.RoleAssistant && s.catalog != nil {
				// A catalogued tool called by its exact name is offered
				// from now on, as if a search had found it.
				s.catalog.Restore([]llm.Message{m})
			}
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
		s.tr.endTurn()
	case agent.EventAgentEnd:
		// The loop has drained its queues: what comes now would be lost.
		s.h.setClosing(true)
	}
	s.emitAgent(ev)
}

// jitter is the default source of backoff jitter.
func jitter() float64 { return rand.Float64() }

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// activate lists the run among the Runner's active ones until the
// returned function is called (which also stops steering).
func (s *run) activate(key string) (deactivate func()) {
	s.r.mu.Lock()
	s.r.active[key] = s.h
	s.r.mu.Unlock()
	return func() {
		s.r.mu.Lock()
		if s.r.active[key] == s.h {
			delete(s.r.active, key)
		}
		s.r.mu.Unlock()
		s.h.bind(nil, nil)
	}
}
