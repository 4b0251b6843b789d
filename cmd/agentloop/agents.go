package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/tool"
)

// runAgents is the subagent Manager of one CLI run: its agent tools go in
// the run's registry, its children's final texts are kept for the one line
// the printer shows per child.
type runAgents struct {
	m *subagent.Manager

	mu    sync.Mutex
	texts map[string]string // task id → the child's last reply
}

// newRunAgents builds the Manager of a run q on rn, adds its tools to
// reg (q's registry) and settles what a crash left in the session the run
// resumes. Children start from q: its model, tools, policy, approval.
func newRunAgents(ctx context.Context, env *cliEnv, f *runFlags, home, cwd string, rn *runner.Runner, store session.Store,
	reg *tool.Registry, q runner.Request, pr *printer) (*runAgents, error) {
	defs, warnings := subagent.LoadDefinitions(subagent.DefinitionDirs(home, cwd)...)
	for _, w := range warnings {
		fmt.Fprintln(env.stderr, "agentloop: warning:", w)
	}
	a := &runAgents{texts: map[string]string{}}
	child := q
	child.OnEvent = nil
	m, err := subagent.New(subagent.Config{Runner: rn, Store: store, Cwd: cwd, Child: child, Definitions: defs,
		MaxDepth: f.agentDepth,
		OnChildEvent: func(t subagent.Task, ev runner.Event) {
			if e := ev.Agent; e != nil && e.Type == agent.EventMessageEnd && e.Message != nil && e.Message.Role == llm.RoleAssistant {
				if text := e.Message.Text(); text != "" {
					a.mu.Lock()
					a.texts[t.ID] = text
					a.mu.Unlock()
				}
			}
		},
		OnEnd: func(t subagent.Task, out subagent.Outcome) {
			if t.Background && !pr.json { // a foreground child's line follows its subagent_end
				fmt.Fprintln(env.stderr, a.line(&runner.Subagent{TaskID: t.ID, Agent: t.Agent, Background: true,
					Description: t.Description, Status: out.Status, Usage: out.Usage, Duration: out.Duration, Turns: out.Turns}))
			}
		},
		OnFollowUp: func(ev runner.Event) {
			if pr.json {
				a.mu.Lock()
				pr.encode(ev)
				a.mu.Unlock()
				return
			}
			// A background result arrived after the run: the follow-up
			// run's answer is printed as the run's was.
			if e := ev.Agent; e != nil && e.Type == agent.EventMessageEnd && e.Message != nil && e.Message.Role == llm.RoleAssistant && !pr.json {
				if text := e.Message.Text(); text != "" {
					fmt.Fprintln(env.stdout, text)
				}
			}
		},
	})
	if err != nil {
		return nil, err
	}
	a.m = m
	for _, t := range m.Tools() {
		if err := reg.Add(t); err != nil {
			return nil, err
		}
	}
	parent := q
	parent.OnEvent = nil
	m.SetParent(parent)
	// The session a run resumes is settled first: what a crash left of its
	// agents is delivered before the run reads it.
	// (--continue has become --session by now: resume.go.)
	if f.session != "" {
		if _, err := m.Settle(ctx, f.session); err != nil {
			fmt.Fprintln(env.stderr, "agentloop: warning: settling the session's agents:", err)
		}
	}
	pr.agents = a
	return a, nil
}

// line is the one line of a child that ended.
func (a *runAgents) line(sa *runner.Subagent) string {
	a.mu.Lock()
	text := a.texts[sa.TaskID]
	a.mu.Unlock()
	mode := ""
	if sa.Background {
		mode = ", background"
	}
	line := fmt.Sprintf("  ⎿ agent %s (%s%s) %q: %s in %s, %d turns, %s in / %s out", sa.TaskID, sa.Agent, mode, sa.Description,
		sa.Status, sa.Duration.Round(time.Millisecond), sa.Turns, count(sa.Usage.Input), count(sa.Usage.Output))
	if text != "" {
		line += ": " + oneLine(strings.TrimSpace(text), 160)
	}
	return line
}

// finish waits for the background agents (their results come as
// follow-up runs) unless ctx is done, then stops what is left.
func (a *runAgents) finish(ctx context.Context, env *cliEnv) {
	if n := len(a.m.Live()); n > 0 && ctx.Err() == nil {
		fmt.Fprintf(env.stderr, "agentloop: waiting for %d background agent(s)\n", n)
		done := make(chan struct{})
		go func() { a.m.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	a.m.Close()
}

// sessionAgents are the subagent Managers of a server's sessions
// (agentloop serve, agentloop acp): one per session, made at its first
// run from that run's Request, so a model on the gateway or in an editor
// can start children. Their lines are the CLI's only: a server's clients
// read subagent_start and subagent_end on the session's stream.
type sessionAgents struct {
	env   *cliEnv
	home  string
	depth int
	store session.Store
	// followUp is every Manager's Config.FollowUp: how a background
	// result reaches an idle session.
	followUp func(sessionID string, end *runner.Event)

	mu     sync.Mutex
	ms     map[string]sessionManager
	closed bool
}

// sessionManager is a session's Manager and the Runner it starts on.
type sessionManager struct {
	m  *subagent.Manager
	rn *runner.Runner
}

func newSessionAgents(env *cliEnv, f *runFlags, home string, store session.Store) *sessionAgents {
	return &sessionAgents{env: env, home: home, depth: f.agentDepth, store: store, ms: map[string]sessionManager{}}
}

// add gives q, a run of session id in cwd on rn, the agent tools of the
// session's Manager. The session's first run makes it, from q (children
// start from its tools and options), and settles first what a crash left
// of the session's agents.
func (a *sessionAgents) add(ctx context.Context, rn *runner.Runner, id, cwd string, q *runner.Request) error {
	if q.Tools == nil {
		return nil // --no-tools
	}
	a.mu.Lock()
	m, made := a.ms[id].m, false
	if m == nil {
		if a.closed {
			a.mu.Unlock()
			return nil
		}
		defs, warnings := subagent.LoadDefinitions(subagent.DefinitionDirs(a.home, cwd)...)
		for _, w := range warnings {
			fmt.Fprintln(a.env.stderr, "agentloop: warning:", w)
		}
		child := *q
		child.OnEvent, child.Approval = nil, nil // a child gets its parent run's approval
		var err error
		m, err = subagent.New(subagent.Config{Runner: rn, Store: a.store, Cwd: cwd, Child: child, Definitions: defs,
			MaxDepth: a.depth, FollowUp: a.followUp})
		if err != nil {
			a.mu.Unlock()
			return err
		}
		a.ms[id], made = sessionManager{m, rn}, true
	}
	a.mu.Unlock()
	if made && id != "" {
		if _, err := m.Settle(ctx, id); err != nil {
			fmt.Fprintf(a.env.stderr, "agentloop: warning: settling the agents of session %s: %v\n", id, err)
		}
	}
	for _, t := range m.Tools() {
		if err := q.Tools.Add(t); err != nil {
			return err
		}
	}
	parent := *q
	parent.OnEvent = nil
	m.SetParent(parent)
	return nil
}

// release stops the agents of a session that started on rn and forgets
// its Manager: rn is about to close (a session reopened on a new Runner
// keeps the Manager of that one).
func (a *sessionAgents) release(id string, rn *runner.Runner) {
	a.mu.Lock()
	sm, ok := a.ms[id]
	if ok && sm.rn == rn {
		delete(a.ms, id)
	}
	a.mu.Unlock()
	if ok && sm.rn == rn {
		sm.m.Close()
	}
}

// close stops every session's agents, the deepest first, and waits for
// their results to be written.
func (a *sessionAgents) close() {
	a.mu.Lock()
	a.closed = true
	ms := a.ms
	a.ms = map[string]sessionManager{}
	a.mu.Unlock()
	for _, sm := range ms {
		sm.m.Close()
	}
}
