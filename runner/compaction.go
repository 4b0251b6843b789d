package runner

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
)

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
	s.emit(Event{Type: agent.EventType(ev.Type), Compaction: &ev})
}

func trigger(t compact.Trigger) string {
	if t == compact.TriggerManual {
		return "manual"
	}
	return "auto"
}

// newCompactor is the run's context budget (nil when Config.Compaction
// turns it off): compaction recorded into the session, its hooks fired on
// bus, its summaries written by the run's own model unless one is given.
func (s *run) newCompactor(bus *hook.Bus, specs []llm.ToolSpec) (Compactor, error) {
	p := &s.p
	if p.Compaction != nil && p.Compaction.Disabled {
		return nil, nil
	}
	if p.Compaction != nil && p.Compaction.Compactor != nil {
		return p.Compaction.Compactor, nil
	}
	window := p.Info.ContextWindow
	if window == 0 {
		window = llm.DefaultContextWindow
	}
	// New guards the declared window; a learned one is set after.
	cc := compact.Config{Window: window, SystemPrompt: p.SystemPrompt, Tools: specs, OnEvent: s.compactEvent, Now: p.Now}
	if p.Compaction != nil {
		cc.Summarizer = p.Compaction.Summarizer
		if sum := cc.Summarizer; sum != nil && sum.Model == nil {
			// The run's own model, as it is when it compacts: after a
			// profile rotation or a fallback, the one that works.
			own := *sum
			own.Model = s.model
			cc.Summarizer = &own
		}
		cc.ReserveTokens = p.Compaction.ReserveTokens
	}
	if s.sess != nil {
		cc.Recorder = &SessionRecorder{Session: s.sess, EntryIDs: func() []string { return s.tr.ids }}
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
		return nil, err
	}
	if s.window < window {
		s.setWindow(c, s.window)
	}
	return c, nil
}
