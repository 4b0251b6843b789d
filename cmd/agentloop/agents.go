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
