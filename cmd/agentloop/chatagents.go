package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/cmd/agentloop/internal/tui"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/subagent"
)

// chatAgents is the one subagent Manager of a chat: its agent tools are in
// every turn's registry, whichever session the turn is on.
type chatAgents struct {
	m *subagent.Manager

	mu      sync.Mutex
	started map[string]time.Time // task id → when its first event came
}

// startAgents offers the agent tools in the chat's turns, as agentloop
// run does (--no-agents, --agent-depth). A background result that reaches
// an idle session becomes a follow-up run the chat shows; one that
// reaches a running turn steers it (the Manager does that).
func (b *chatBackend) startAgents(ctx context.Context) error {
	s := b.s
	defs, warnings := subagent.LoadDefinitions(subagent.DefinitionDirs(s.home, s.cwd)...)
	for _, w := range warnings {
		fmt.Fprintln(b.env.stderr, "agentloop: warning:", w)
	}
	a := &chatAgents{started: map[string]time.Time{}}
	child := b.q
	child.OnEvent = nil
	m, err := subagent.New(subagent.Config{Runner: s.rn, Store: s.store, Cwd: s.cwd, Child: child, Definitions: defs,
		MaxDepth: b.f.agentDepth, FollowUp: b.followUp,
		OnChildEvent: func(t subagent.Task, _ runner.Event) {
			a.mu.Lock()
			if _, ok := a.started[t.ID]; !ok {
				a.started[t.ID] = time.Now()
			}
			a.mu.Unlock()
		},
		OnEnd: func(t subagent.Task, _ subagent.Outcome) {
			a.mu.Lock()
			delete(a.started, t.ID)
			a.mu.Unlock()
		},
	})
	if err != nil {
		return err
	}
	a.m = m
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range m.Tools() {
		if err := b.q.Tools.Add(t); err != nil {
			return err
		}
	}
	parent := b.q
	parent.OnEvent = nil
	m.SetParent(parent)
	// The session the chat continues is settled first: what a crash left
	// of its agents is delivered before the first turn reads it.
	if id := b.q.Session.ID; id != "" {
		if _, err := m.Settle(ctx, id); err != nil {
			fmt.Fprintln(b.env.stderr, "agentloop: warning: settling the session's agents:", err)
		}
	}
	b.agents = a
	return nil
}

// followUp is the Manager's Config.FollowUp: a background result is in
// the transcript of an idle session; the chat shows its subagent_end and
// runs a turn that reads it. A turn already going (the person's) reads it
// at its start, so none is started then.
func (b *chatBackend) followUp(sessionID string, end *runner.Event) {
	if end != nil {
		b.sendMsg(tui.EventMsg{Event: *end})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return
	}
	if b.run != nil {
		select {
		case <-b.run.Done():
		default:
			return
		}
	}
	q := b.q
	q.Prompt, q.Images, q.History = "", nil, nil
	q.Resume = true
	q.Session = runner.SessionSpec{Cwd: b.q.Session.Cwd, ID: sessionID, Opened: b.q.Session.Opened}
	run, err := b.s.rn.Start(b.ctx, q)
	if err != nil {
		b.sendMsg(tui.RunErrorMsg{Err: errors.New(describeError(err))})
		return
	}
	b.pump(run)
}

// agentsCommand is /agents (the live children) and /agents stop ID.
func (b *chatBackend) agentsCommand(args string) (string, error) {
	a := b.agents
	if a == nil {
		return "no subagents: this chat offers no agent tool (--no-agents, --no-tools or --no-session)", nil
	}
	verb, id, _ := strings.Cut(strings.TrimSpace(args), " ")
	switch verb {
	case "":
		live := a.m.Live()
		if len(live) == 0 {
			return "no subagents running", nil
		}
		var sb strings.Builder
		sb.WriteString("subagents running (/agents stop ID):")
		for _, t := range live {
			a.mu.Lock()
			at, ok := a.started[t.ID]
			a.mu.Unlock()
			elapsed := "-"
			if ok {
				elapsed = time.Since(at).Round(time.Second).String()
			}
			mode := "running"
			if t.Background {
				mode = "running, background"
			}
			fmt.Fprintf(&sb, "\n  %s  %s  %q  %s  %s", t.ID, t.Agent, t.Description, mode, elapsed)
		}
		return sb.String(), nil
	case "stop":
		id = strings.TrimSpace(id)
		if id == "" {
			return "", errors.New("give the task: /agents stop ID")
		}
		out, ok := a.m.Stop(id)
		if !ok {
			return "", fmt.Errorf("no running subagent %s (/agents lists them)", id)
		}
		msg := fmt.Sprintf("stopped %s: %s", id, out.Status)
		if len(out.Stopped) > 0 {
			msg += " (and first its descendants " + strings.Join(out.Stopped, ", ") + ")"
		}
		return msg, nil
	}
	return "", errors.New("use /agents or /agents stop ID")
}
