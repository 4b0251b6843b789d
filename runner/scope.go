package runner

import (
	"context"
	"errors"
	"time"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// Scope is what a tool call may reach of the run that makes it: a tool
// that starts runs of its own (package subagent) records them in the run's
// session, says so on the run's stream, and gives them the run's approval,
// model and timeout. ScopeOf finds it from the ctx a tool's Execute gets;
// Run.Scope from the run's handle.
type Scope struct{ s *run }

type scopeKey struct{}

// ScopeOf returns the scope of the run whose tool call ctx belongs to; nil
// outside a run.
func ScopeOf(ctx context.Context) *Scope {
	sc, _ := ctx.Value(scopeKey{}).(*Scope)
	return sc
}

// Scope returns the run's scope.
func (h *Run) Scope() *Scope { return h.scope }

// Run is the run's handle (Steer, FollowUp, Abort, Wait).
func (c *Scope) Run() *Run { return c.s.h }

// SessionID is the run's session ("" without a store).
func (c *Scope) SessionID() string { return c.s.h.sessionID }

// Lane is the global lane the run waits in.
func (c *Scope) Lane() string { return resolveGlobalLane(c.s.h.lane) }

// Approval is the run's approval (nil: every call the policy lets through
// runs).
func (c *Scope) Approval() *tool.Approval { return c.s.p.Approval }

// Timeout is the run's timeout as its Request gave it (0: the default).
func (c *Scope) Timeout() time.Duration { return c.s.p.Timeout }

// Model is the model the run started on.
func (c *Scope) Model() (llm.Model, llm.ModelInfo) { return c.s.p.Model, c.s.p.Info }

// Header is the run's session header (the zero Header before the session
// is open, or without a store).
func (c *Scope) Header() session.Header {
	if sess := c.session(); sess != nil {
		return sess.Header()
	}
	return session.Header{}
}

// Bus is the run's hook bus (nil when the run loads no hooks): hooks of
// the things a tool starts for the run (subagent_start, subagent_stop)
// fire on it.
func (c *Scope) Bus() *hook.Bus {
	c.s.sessMu.Lock()
	defer c.s.sessMu.Unlock()
	return c.s.bus
}

// Path is the run's transcript file ("" without one).
func (c *Scope) Path() string {
	if fs, ok := c.session().(interface{ Path() string }); ok {
		return fs.Path()
	}
	return ""
}

// Transcript is a snapshot of the run's session (nil without one).
func (c *Scope) Transcript() *session.Transcript {
	if sess := c.session(); sess != nil {
		return sess.Transcript()
	}
	return nil
}

// ErrNoSession is returned by Scope.Append for a run without an open
// session.
var ErrNoSession = errors.New("runner: the run has no open session")

// Append writes a non-message entry (a custom entry) to the run's session,
// under the lock the run holds. Entries that are not messages are never
// sent to a model, so one written between a tool call and its result
// leaves the pairing as it is.
func (c *Scope) Append(ctx context.Context, e session.Entry) (string, error) {
	sess := c.session()
	if sess == nil {
		return "", ErrNoSession
	}
	if e.Type == session.EntryMessage {
		return "", errors.New("runner: Scope.Append takes no messages; steer them into the run")
	}
	return sess.Append(context.WithoutCancel(ctx), e)
}

// Emit sends a subagent_start (no Status) or subagent_end event on the
// run's stream. It reports false, sending nothing, once the run has sent
// run_end, which stays its last event.
func (c *Scope) Emit(info Subagent) bool {
	t := EventSubagentStart
	if info.Status != "" {
		t = EventSubagentEnd
	}
	c.s.emitMu.Lock()
	defer c.s.emitMu.Unlock()
	if c.s.endSent {
		return false
	}
	c.s.emitLocked(Event{Type: t, Subagent: &info})
	return true
}

func (c *Scope) session() session.Session {
	c.s.sessMu.Lock()
	defer c.s.sessMu.Unlock()
	return c.s.sess
}

func (s *run) scope() *Scope { return s.h.scope }
