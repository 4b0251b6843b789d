package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/failover"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/session"
)

// loop runs attempts and applies the cascade between them.
func (s *run) loop(ctx context.Context, a *agent.Agent, comp Compactor, prompt llm.Message) Result {
	p := s.p
	policy := s.r.cfg.Retry
	if p.Retry != nil {
		policy = *p.Retry
	}
	if policy.Jitter == nil {
		policy.Jitter = jitter
	}
	maxIter := p.MaxIterations
	if maxIter <= 0 {
		maxIter = failover.MaxIterations(max(p.Profiles, len(p.AuthProfiles)))
	}
	pr := s.newProfiles(ctx)
	window := s.window
	st := cascadeState{Window: window, Profiles: max(1, p.Profiles, len(p.AuthProfiles)), ProfilesLeft: pr.left()}
	fallbacks := p.FallbackModels
	if p.ResolveModel == nil {
		fallbacks = nil
	}
	st.FallbacksLeft = len(fallbacks)
	thinking := p.Options.Thinking
	if thinking == "" {
		thinking = llm.ThinkingOff
	}
	st.AttemptedThinking = []llm.ThinkingLevel{thinking}
	first := true
	var res Result
	for {
		if s.iterations >= maxIter {
			return Result{Reason: ReasonRetryLimit, StopReason: llm.StopReasonError, Retries: st.Retries,
				Err:     fmt.Errorf("gave up after %d attempts (the limit is %d)", s.iterations, maxIter),
				Message: retryLimitUserMessage}
		}
		s.iterations++
		s.attemptCompacted = false
		s.notice(EventAttemptStart, Notice{Attempt: s.iterations, Max: maxIter})
		var end *agent.Event
		s.h.setClosing(false) // a retry takes messages again
		seq := a.Continue(ctx)
		if first && !p.Resume {
			seq = a.Run(ctx, prompt)
		}
		first = false
		for ev, err := range seq {
			if err != nil {
				return Result{Reason: string(llm.ReasonUnknown), StopReason: llm.StopReasonError, Err: err, Message: err.Error()}
			}
			s.onAgentEvent(ctx, ev)
			if ev.Type == agent.EventAgentEnd {
				e := ev
				end = &e
			}
		}
		if end == nil {
			return Result{Reason: string(llm.ReasonUnknown), StopReason: llm.StopReasonError, Err: errors.New("the attempt ended without a result")}
		}
		res = Result{StopReason: end.StopReason, Err: end.Err, Retries: st.Retries}
		if ctx.Err() != nil {
			return s.stopped(ctx, res)
		}
		o := attemptOutcome{End: end.Reason, Compacted: s.attemptCompacted, Err: end.Err}
		if end.Reason == agent.ReasonError {
			o.Failure = llm.ClassifyError(end.Err)
			var pe *llm.ProviderError
			if errors.As(end.Err, &pe) {
				o.RetryAfter = pe.RetryAfter
			}
			o.PromptTokens = s.promptTokens(a)
			if end.Err != nil {
				o.Message = end.Err.Error()
			}
			if o.Failure == llm.ReasonContextOverflow {
				if n := s.learnWindow(comp, o.Message); n > 0 {
					window, st.Window = n, n
				}
			}
		}
		for {
			d := decide(o, st, policy)
			switch d.Action {
			case actFinish:
				if d.Reason == agent.ReasonStop {
					pr.good()
				}
				res.Reason = d.Reason
				if d.Reason == agent.ReasonMaxTurns {
					res.Message = "the run reached its turn limit"
				}
				return res
			case actFail:
				if d.Mark {
					pr.fail(o.Failure) // the next run starts on another profile
				}
				res.Reason, res.Message = d.Reason, d.Message
				res.StopReason = llm.StopReasonError
				if res.Err != nil && llm.ReasonOf(res.Err) == "" && o.Failure == llm.ReasonUnknown {
					// Not the provider's failure (a refused window, a
					// broken transform): its own words say more.
					res.Message = res.Err.Error()
				}
				if res.Err == nil {
					res.Err = errors.New(d.Message)
				}
				return res
			case actRotateProfile:
				streamed := s.dropFailedTail(a)
				if d.Mark {
					pr.fail(o.Failure)
				}
				switch o.Failure {
				case llm.ReasonRateLimit:
					st.RateLimitRotations++
				case llm.ReasonOverloaded:
					st.OverloadRotations++
				}
				name, err := pr.next(ctx)
				st.ProfilesLeft = pr.left()
				if err != nil {
					s.warn(err.Error())
					continue // decide again: maybe another profile, maybe a failure
				}
				s.notice(EventProfileRotation, Notice{Reason: d.Reason, Streamed: streamed,
					Message: fmt.Sprintf("%s: switching to auth profile %s", failover.Words(llm.Reason(d.Reason)), orStr(name, "(default key)"))})
			case actFallbackModel:
				streamed := s.dropFailedTail(a)
				if d.Mark {
					pr.fail(o.Failure) // the last profile failed too: it rests like the others
				}
				spec := fallbacks[0]
				fallbacks = fallbacks[1:]
				st.FallbacksLeft = len(fallbacks)
				prov, id, _ := strings.Cut(spec, "/")
				m, info, err := p.ResolveModel(ctx, prov, id)
				if err != nil {
					s.warn(fmt.Sprintf("fallback model %s cannot be used: %v", spec, err))
					continue // decide again: the next fallback, or the failure
				}
				s.model.setModel(m)
				s.model.setLimit(info.MaxTokens)
				s.p.Info = info
				s.record(ctx, session.ModelChangeEntry(info.Provider, info.ID))
				if info.ContextWindow > 0 {
					// The cascade's overflow and timeout decisions read
					// the window of the model that now runs (or the one
					// its server was seen to enforce).
					s.window = s.startWindow()
					window, st.Window = s.window, s.window
					if s.window < info.ContextWindow {
						s.setWindow(comp, s.window)
					}
				}
				st.Retries, st.ProfilesLeft = 0, 0 // a new model; its profiles are not known here
				pr.names, pr.tried = nil, nil
				s.notice(EventModelFallback, Notice{Reason: d.Reason, Streamed: streamed,
					Message: fmt.Sprintf("%s; now on %s", d.Message, spec)})
			case actThinkingFallback:
				streamed := s.dropFailedTail(a)
				st.AttemptedThinking = append(st.AttemptedThinking, d.Thinking)
				s.model.setLevel(d.Thinking)
				s.record(ctx, session.ThinkingLevelEntry(d.Thinking))
				s.notice(EventThinkingFallback, Notice{Reason: string(d.Thinking), Streamed: streamed, Message: d.Message})
			case actRetry:
				streamed := s.dropFailedTail(a)
				st.Retries++
				res.Retries = st.Retries
				s.notice(EventRetry, Notice{Reason: d.Reason, Delay: d.Delay, Attempt: st.Retries,
					Max: policy.withDefaults().Attempts, Streamed: streamed, Message: d.Message})
				if err := s.clock.Sleep(ctx, d.Delay); err != nil {
					return s.stopped(ctx, res)
				}
			case actOverflowRetry:
				st.OverflowCompactions++
				streamed := s.dropFailedTail(a)
				s.notice(EventOverflowRetry, Notice{Reason: d.Reason, Attempt: st.OverflowCompactions, Max: MaxOverflowCompactions, Streamed: streamed, Message: d.Message})
			case actCompact, actTimeoutCompact:
				streamed := s.dropFailedTail(a)
				if d.Action == actCompact {
					st.OverflowCompactions++
					s.notice(EventCompactionRetry, Notice{Reason: d.Reason, Attempt: st.OverflowCompactions, Max: MaxOverflowCompactions, Streamed: streamed, Message: d.Message})
				} else {
					st.TimeoutCompactions++
					s.notice(EventTimeoutCompaction, Notice{Reason: d.Reason, Attempt: st.TimeoutCompactions, Max: MaxTimeoutCompactions, Streamed: streamed, Message: d.Message})
				}
				if err := s.recover(ctx, a, comp); err != nil {
					if ctx.Err() != nil {
						return s.stopped(ctx, res)
					}
					s.warn(fmt.Sprintf("compaction did not help: %v", err))
					if d.Action == actCompact {
						st.OverflowCompactions = MaxOverflowCompactions
					} else {
						st.TimeoutCompactions = MaxTimeoutCompactions
					}
					continue // decide again without an attempt
				}
			case actTruncate:
				st.TruncationTried = true
				streamed := s.dropFailedTail(a)
				n := s.truncate(ctx, a, window)
				if n == 0 {
					continue // nothing to shorten: decide again
				}
				s.notice(EventTruncationRetry, Notice{Reason: d.Reason, Attempt: n, Streamed: streamed,
					Message: fmt.Sprintf("%s (%d results)", d.Message, n)})
			}
			break
		}
	}
}

// stopped is the result of a run whose context ended: why it ended decides
// the reason code.
func (s *run) stopped(ctx context.Context, res Result) Result {
	cause := context.Cause(ctx)
	res.Err = cause
	var be *BudgetError
	var he *HaltError
	switch {
	case errors.As(cause, &be):
		res.Reason, res.Message = be.Kind, be.Error()
	case errors.As(cause, &he):
		res.Reason, res.Message = ReasonHalted, he.Error()
	case errors.Is(cause, ErrRunTimeout):
		res.Reason, res.Message = ReasonTimeout, "the run was stopped at its timeout (--timeout)"
	case errors.Is(cause, loopguard.ErrCircuitBreaker):
		res.Reason, res.Message = ReasonLoopDetected, cause.Error()
	default:
		res.Reason, res.Message = ReasonAborted, "the run was aborted"
	}
	res.StopReason = llm.StopReasonAborted
	return res
}

// dropFailedTail removes the failed assistant message that ends the
// history before a retry (a turn whose tools ran is kept: its results
// follow it), and moves the session's leaf back before it, so the retried
// reply continues from the same point and the failed one stays only as a
// dead branch of the file. It reports whether the dropped reply had
// streamed text.
func (s *run) dropFailedTail(a *agent.Agent) (streamed bool) {
	msgs := a.Messages()
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != llm.RoleAssistant || !msgs[n-1].StopReason.Failed() {
		return false
	}
	streamed = msgs[n-1].Text() != ""
	if err := a.SetMessages(msgs[:n-1]); err != nil {
		return streamed
	}
	s.tr.dropLast(n)
	return streamed
}

// record appends a non-message entry (a model or thinking-level change) to
// the session, when the run has one.
func (s *run) record(ctx context.Context, e session.Entry) { s.tr.record(ctx, e) }

// errNothingRemoved says compaction could not make a refused prompt smaller.
var errNothingRemoved = errors.New("nothing could be removed from the prompt")

// recover compacts after an overflow or a big timed-out prompt.
func (s *run) recover(ctx context.Context, a *agent.Agent, comp Compactor) error {
	if comp == nil {
		return errors.New("compaction is off")
	}
	s.compacting.Store(true)
	defer s.compacting.Store(false)
	before := s.compactions
	out, err := comp.Recover(ctx, a.Messages())
	if err != nil {
		return err
	}
	// A prompt the provider refused but that compaction left as big as it
	// was (our window for the model is larger than the provider's) would be
	// sent again unchanged: say so, and let the cascade move on.
	if sent := s.lastPrompt; sent > 0 && compact.MessagesTokens(out)*100 >= sent*99 {
		return errNothingRemoved
	}
	if s.compactions == before {
		// A compactor that reports no events (or only truncated) still
		// counts once.
		s.compactions++
	}
	return nil
}

// truncate shortens the tool results of the history once, after
// compaction could not bring it under the window: every result over the
// per-result cap is cut to it, or, when none is, all of them lose half of
// their text together. The shortened results are recorded in the session.
// It returns how many results were shortened.
func (s *run) truncate(ctx context.Context, a *agent.Agent, window int) int {
	msgs := a.Messages()
	out, recs := compact.CapToolResults(msgs, compact.MaxToolResultChars(window))
	if len(recs) == 0 {
		total := 0
		for i := range msgs {
			total += compact.ToolResultTextChars(&msgs[i])
		}
		var ok bool
		out, recs, ok = compact.ShrinkToolResults(msgs, total/2, 0)
		if !ok {
			return 0
		}
	}
	if len(recs) == 0 || a.SetMessages(out) != nil {
		return 0
	}
	ids := s.tr.entryIDs(len(msgs))
	for _, t := range recs {
		if !s.tr.record(ctx, session.TruncationEntry(entryAt(ids, t.Index), t.ToolCallID, t.Content)) {
			break
		}
	}
	return len(recs)
}

// promptTokens is the prompt size of the last model call: its reported
// usage, or an estimate of the history.
func (s *run) promptTokens(a *agent.Agent) int {
	msgs := a.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role == llm.RoleAssistant && m.Usage != nil && m.Usage.Input+m.Usage.CacheRead > 0 {
			return m.Usage.Input + m.Usage.CacheRead + m.Usage.CacheWrite
		}
	}
	return compact.Estimate(compact.Prompt{System: s.p.SystemPrompt, Messages: msgs, UsageFrom: -1}).Tokens
}

// profiles walks a run's auth profiles.
type profiles struct {
	s     *run
	names []string
	cur   int
	tried []bool
}

// newProfiles starts the run on its first profile that is not cooling
// down (switching the model when that is not the first).
func (s *run) newProfiles(ctx context.Context) *profiles {
	pr := &profiles{s: s, names: s.p.AuthProfiles, tried: make([]bool, len(s.p.AuthProfiles))}
	if len(pr.names) == 0 {
		return pr
	}
	pr.tried[0] = true
	if s.p.UseProfile == nil || !pr.resting(0) {
		return pr
	}
	if name, err := pr.next(ctx); err == nil {
		s.notice(EventProfileRotation, Notice{Reason: "cooldown",
			Message: fmt.Sprintf("auth profile %s is cooling down after recent failures: starting on %s", orStr(pr.names[0], "(default key)"), orStr(name, "(default key)"))})
	}
	return pr
}

// left counts the profiles the run may still switch to.
func (pr *profiles) left() int {
	if pr.s.p.UseProfile == nil {
		return 0
	}
	n := 0
	for _, t := range pr.tried {
		if !t {
			n++
		}
	}
	return n
}

// store is where the profiles' failures are kept: Config.Auth, else the
// Runner's memory.
func (pr *profiles) store() *auth.Store {
	if st := pr.s.p.Auth; st != nil {
		return st
	}
	return pr.s.r.cooldowns
}

// resting reports whether profile i is cooling down (or disabled).
func (pr *profiles) resting(i int) bool {
	usable, err := pr.store().Usable(pr.s.p.Info.Provider, pr.s.p.Info.ID, pr.names[i:i+1])
	return err == nil && len(usable) == 0
}

// fail records that the current profile failed for reason.
func (pr *profiles) fail(reason llm.Reason) {
	if len(pr.names) == 0 {
		return
	}
	if _, err := pr.store().MarkFailure(pr.s.p.Info.Provider, pr.names[pr.cur], pr.s.p.Info.ID, reason); err != nil {
		pr.s.warn(fmt.Sprintf("could not record the failure of auth profile %s: %v", orStr(pr.names[pr.cur], "(default key)"), err))
	}
}

// good records that the current profile worked.
func (pr *profiles) good() {
	if len(pr.names) == 0 {
		return
	}
	_ = pr.store().MarkGood(pr.s.p.Info.Provider, pr.names[pr.cur], pr.s.p.Info.ID)
}

// next switches to the next untried profile, preferring those not cooling
// down, and returns its name.
func (pr *profiles) next(ctx context.Context) (string, error) {
	pick := -1
	for i := range pr.names {
		if pr.tried[i] {
			continue
		}
		if !pr.resting(i) {
			pick = i
			break
		}
		if pick < 0 {
			pick = i
		}
	}
	if pick < 0 {
		return "", errors.New("no auth profile left to try")
	}
	pr.tried[pick] = true
	m, _, err := pr.s.p.UseProfile(ctx, pr.names[pick])
	if err != nil {
		return "", fmt.Errorf("auth profile %s cannot be used: %v", pr.names[pick], err)
	}
	pr.cur = pick
	pr.s.model.setModel(m)
	return pr.names[pick], nil
}
