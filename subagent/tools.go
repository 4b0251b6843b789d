package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// The tools' names.
const (
	ToolAgent = "agent"
	ToolSend  = "agent_send"
	ToolStop  = "agent_stop"
)

// AgentInput is the agent tool's arguments.
type AgentInput struct {
	Description string `json:"description" jsonschema:"a 3-7 word label of the task, shown to the user"`
	Prompt      string `json:"prompt" jsonschema:"the complete, self-contained task: the agent sees nothing else of this conversation"`
	Agent       string `json:"agent,omitempty" jsonschema:"a defined agent type; default general"`
	Model       string `json:"model,omitempty" jsonschema:"provider/id of the model to use; default the agent type's or this conversation's"`
	Background  bool   `json:"background,omitempty" jsonschema:"run in the background: the call returns at once and the result arrives later as a message; do not poll"`
	Context     string `json:"context,omitempty" jsonschema:"isolated (default): a fresh conversation; fork: a copy of this conversation so far"`
}

// SendInput is agent_send's arguments.
type SendInput struct {
	TaskID  string `json:"taskId" jsonschema:"the task id the agent call returned"`
	Message string `json:"message" jsonschema:"what to tell the running agent"`
	Mode    string `json:"mode,omitempty" jsonschema:"steer (default): read at its next step; follow_up: read when it would stop"`
}

// StopInput is agent_stop's arguments.
type StopInput struct {
	TaskID string `json:"taskId" jsonschema:"the task id to stop; its own agents are stopped first"`
}

// details is a foreground result's Details.
type details struct {
	TaskID         string    `json:"taskId"`
	ChildSessionID string    `json:"childSessionId"`
	Status         string    `json:"status"`
	Usage          llm.Usage `json:"usage"`
	DurationMs     int64     `json:"durationMs"`
	Turns          int       `json:"turns"`
	Stopped        []string  `json:"stopped,omitempty"`
}

// agentTool is the agent tool: of the parallel class (several calls of one
// message run together once it is complete; they are not read-only).
type agentTool struct{ *tool.Func }

func (agentTool) ParallelCall(tool.Call) bool { return true }

// Tools returns the agent, agent_send and agent_stop tools, for the
// registry of a run whose session may start children.
func (m *Manager) Tools() []tool.Tool {
	var names []string
	for n := range m.defs {
		names = append(names, n)
	}
	slices.Sort(names)
	var types strings.Builder
	for _, n := range names {
		fmt.Fprintf(&types, "\n- %s: %s", n, m.defs[n].Description)
	}
	agent := tool.New(ToolAgent, "Hand a complex, self-contained task to a new agent with a fresh context. By default the call waits and returns the agent's final report; "+
		"several agent calls in one message run in parallel. With background the call returns a task id at once and the result arrives later as a message: do not poll for it. Agent types:"+types.String(),
		func(context.Context, AgentInput, func(tool.Partial)) (tool.Result, error) { return tool.Result{}, nil })
	agent.Run = func(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
		var in AgentInput
		if err := tool.DecodeArgs(call, &in); err != nil {
			return tool.Result{}, err
		}
		return m.agentCall(ctx, call.ID, in)
	}
	send := tool.New(ToolSend, "Send a message to a running agent of this session: steer (read at its next step) or follow_up (read when it would stop).",
		func(ctx context.Context, in SendInput, _ func(tool.Partial)) (tool.Result, error) {
			return m.sendCall(ctx, in)
		})
	stop := tool.New(ToolStop, "Stop a running agent and every agent it started (those first). Each stopped agent reports itself cancelled.",
		func(ctx context.Context, in StopInput, _ func(tool.Partial)) (tool.Result, error) {
			return m.stopCall(ctx, in)
		})
	return []tool.Tool{agentTool{agent}, send, stop}
}

// agentCall is one call of the agent tool.
func (m *Manager) agentCall(ctx context.Context, callID string, in AgentInput) (tool.Result, error) {
	sc := runner.ScopeOf(ctx)
	if sc == nil || sc.SessionID() == "" {
		return tool.ErrorResult("agent needs a run with a session (it was started without a session store)"), nil
	}
	h := sc.Header()
	if h.Depth >= m.cfg.MaxDepth {
		return tool.ErrorResult(fmt.Sprintf("agent is not allowed at depth %d (max %d)", h.Depth, m.cfg.MaxDepth)), nil
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return tool.ErrorResult("agent needs a prompt: the complete task for the new agent"), nil
	}
	name := in.Agent
	if name == "" {
		name = GeneralAgent
	}
	def, ok := m.defs[name]
	if !ok {
		var known []string
		for n := range m.defs {
			known = append(known, n)
		}
		slices.Sort(known)
		return tool.ErrorResult(fmt.Sprintf("unknown agent type %q; the types are: %s", name, strings.Join(known, ", "))), nil
	}
	if in.Context != "" && in.Context != "isolated" && in.Context != "fork" {
		return tool.ErrorResult(fmt.Sprintf("context must be isolated or fork, not %q", in.Context)), nil
	}
	t := &task{Task: Task{ID: newTaskID(), Agent: name, Description: in.Description, ParentSessionID: sc.SessionID(),
		ParentToolCallID: callID, Depth: h.Depth + 1, Background: in.Background}, done: make(chan struct{})}
	t.parent = m.taskOfSession(sc.SessionID())
	t.root = sc.SessionID()
	if t.parent != nil {
		t.root = t.parent.root
	}
	if err := m.register(t); err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	q, err := m.childRequest(ctx, sc, t, def, in)
	if err != nil {
		m.unregister(t)
		close(t.done)
		return tool.ErrorResult(err.Error()), nil
	}
	// A foreground child's context is the call's: aborting the parent run
	// cancels it. A background child hangs off the Manager.
	runCtx := ctx
	if t.Background {
		runCtx = m.base
	}
	runCtx = tool.WithOrigin(runCtx, tool.Origin{TaskID: t.ID, ParentToolCallID: callID, Agent: name})
	t.start = time.Now()
	run, err := m.cfg.Runner.Start(runCtx, q)
	if err != nil {
		m.unregister(t)
		close(t.done)
		return tool.ErrorResult(fmt.Sprintf("the agent could not start: %v", err)), nil
	}
	// A stop that came while the run was starting is carried out now.
	m.mu.Lock()
	t.mu.Lock()
	t.run, t.SessionID = run, run.SessionID()
	stopping := t.stopping
	t.mu.Unlock()
	m.bySession[t.SessionID] = t
	m.mu.Unlock()
	if stopping {
		run.Abort()
	}

	spawn := SpawnRecord{TaskID: t.ID, ChildSessionID: t.SessionID, Background: t.Background, Agent: name,
		Description: in.Description, ToolCallID: callID, Depth: t.Depth}
	if _, err := sc.Append(ctx, spawnEntry(spawn)); err != nil {
		run.Abort()
		go drain(run, nil)
		<-run.Done()
		m.unregister(t)
		close(t.done)
		return tool.ErrorResult(fmt.Sprintf("the agent could not be recorded in the transcript: %v", err)), nil
	}
	sc.Emit(runner.Subagent{TaskID: t.ID, ChildSessionID: t.SessionID, ParentToolCallID: callID, Agent: name,
		Background: t.Background, Depth: t.Depth, Description: in.Description})
	if bus := sc.Bus(); bus != nil {
		bus.SubagentStart(ctx, hook.SubagentEvent{AgentID: t.ID, AgentType: name, ChildSessionID: t.SessionID})
	}
	parentRun := sc.Run()
	forward := func(ev runner.Event) {
		if m.cfg.OnChildEvent != nil {
			m.cfg.OnChildEvent(t.Task, ev)
		}
	}
	if !t.Background {
		res, err := drain(run, forward)
		out := m.end(t, res, err)
		m.deliverForeground(ctx, sc, t, out)
		return foregroundResult(t, out, m.cfg.ResultLimit), nil
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		res, err := drain(run, forward)
		out := m.end(t, res, err)
		m.deliverBackground(t, out)
	}()
	if m.cfg.StopBackgroundOnInterrupt {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			select {
			case <-parentRun.Done():
				if res, _ := parentRun.Wait(); res.Reason == runner.ReasonAborted {
					m.stop(t)
				}
			case <-t.done:
			}
		}()
	}
	b, _ := json.Marshal(map[string]any{"status": "accepted", "taskId": t.ID, "childSessionId": t.SessionID,
		"note": "Runs in the background; its result arrives as a message. Do not poll."})
	return tool.Result{Content: []llm.Content{llm.Text(string(b))}, Details: b}, nil
}

// drain reads a run's events to its end, handing each to forward.
func drain(run *runner.Run, forward func(runner.Event)) (runner.Result, error) {
	for ev, err := range run.Events() {
		if err != nil {
			break
		}
		if forward != nil {
			forward(ev)
		}
	}
	return run.Wait()
}

// end settles a task's outcome once its run has ended.
func (m *Manager) end(t *task, res runner.Result, err error) Outcome {
	t.mu.Lock()
	stopping, stopped := t.stopping, t.stopped
	t.mu.Unlock()
	out := outcomeOf(res, err, stopping)
	out.Duration = time.Since(t.start)
	out.Stopped = stopped
	t.out = out
	if m.cfg.OnEnd != nil {
		m.cfg.OnEnd(t.Task, out)
	}
	return out
}

// childRequest builds a child's run.
func (m *Manager) childRequest(ctx context.Context, sc *runner.Scope, t *task, def Definition, in AgentInput) (runner.Request, error) {
	q := m.cfg.Child
	q.Resume, q.OnEvent, q.History = false, nil, nil
	q.Prompt = in.Prompt
	if pm, pi := sc.Model(); q.Model == nil {
		q.Model, q.Info = pm, pi
	}
	spec := in.Model
	if spec == "" {
		spec = def.Model
	}
	if spec != "" {
		if m.cfg.ResolveModel == nil {
			return q, fmt.Errorf("model %q cannot be chosen here: this program does not resolve models for agents", spec)
		}
		model, info, err := m.cfg.ResolveModel(ctx, spec)
		if err != nil {
			return q, fmt.Errorf("model %q: %v", spec, err)
		}
		q.Model, q.Info = model, info
	}
	reg, err := m.childTools(def, t.Depth)
	if err != nil {
		return q, err
	}
	q.Tools = reg
	base := def.SystemPrompt
	if def.Path == "" && def.Name == GeneralAgent {
		// The built-in agent works as the parent does, with its
		// instructions; a defined agent's file is its whole prompt.
		base = joinLines(q.SystemPrompt, base)
	}
	q.SystemPrompt = joinLines(base, fmt.Sprintf("[Subagent Context] You are running as a subagent (depth %d/%d), task %s. "+
		"Your final answer is returned to the agent that started you.", t.Depth, m.cfg.MaxDepth, t.ID))
	if pa := sc.Approval(); pa != nil {
		q.Approval = &tool.Approval{Policy: pa.Policy, Ask: pa.Ask}
	} else {
		q.Approval = nil
	}
	if q.Timeout == 0 {
		q.Timeout = sc.Timeout()
	}
	q.Session = runner.SessionSpec{Cwd: m.cfg.Cwd, Subagent: &session.Subagent{ParentSessionID: t.ParentSessionID,
		ParentToolCallID: t.ParentToolCallID, TaskID: t.ID, Depth: t.Depth, Agent: t.Agent}}
	if in.Context == "fork" {
		q.Session.Fork = t.ParentSessionID
	}
	q.SessionKey, q.ParentLane = "", ""
	q.Lane = runner.LaneSubagent
	if t.Depth > 1 {
		// Below a child, the nested lane: a grandchild waiting for a
		// subagent slot its own parent holds would wait forever.
		q.Lane = runner.LaneNested
	}
	return q, nil
}

func foregroundResult(t *task, out Outcome, limit int) tool.Result {
	d, _ := json.Marshal(details{TaskID: t.ID, ChildSessionID: t.SessionID, Status: out.Status, Usage: out.Usage,
		DurationMs: out.Duration.Milliseconds(), Turns: out.Turns, Stopped: out.Stopped})
	text := capText(out.Text, limit)
	if out.Status != StatusCompleted {
		text = fmt.Sprintf("The agent's task %s ended: %s.\n%s", t.ID, out.Status, text)
	}
	text += fmt.Sprintf("\n\n[task %s: %s, %d turns, %s, %d input / %d output tokens]", t.ID, out.Status, out.Turns,
		out.Duration.Round(time.Millisecond), out.Usage.Input, out.Usage.Output)
	return tool.Result{Content: []llm.Content{llm.Text(text)}, Details: d, IsError: out.Status != StatusCompleted}
}

// sendCall is agent_send.
func (m *Manager) sendCall(ctx context.Context, in SendInput) (tool.Result, error) {
	t, refusal := m.ownTask(ctx, in.TaskID)
	if t == nil {
		return tool.ErrorResult(refusal), nil
	}
	var ok bool
	switch in.Mode {
	case "", "steer":
		ok = t.handle().Steer(in.Message)
	case "follow_up":
		ok = t.handle().FollowUp(in.Message)
	default:
		return tool.ErrorResult(fmt.Sprintf("mode must be steer or follow_up, not %q", in.Mode)), nil
	}
	if !ok {
		return tool.ErrorResult(fmt.Sprintf("task %s is not taking messages now (it is ending or compacting); its result will arrive as a message", t.ID)), nil
	}
	return tool.TextResult(fmt.Sprintf("sent to task %s", t.ID)), nil
}

// stopCall is agent_stop.
func (m *Manager) stopCall(ctx context.Context, in StopInput) (tool.Result, error) {
	t, refusal := m.ownTask(ctx, in.TaskID)
	if t == nil {
		return tool.ErrorResult(refusal), nil
	}
	out := m.stop(t)
	text := fmt.Sprintf("task %s stopped (%s)", t.ID, out.Status)
	if len(out.Stopped) > 0 {
		text += "; its agents stopped first: " + strings.Join(out.Stopped, ", ")
	}
	return tool.TextResult(text), nil
}

// ownTask finds a running task that the calling run's session started, or
// says why not.
func (m *Manager) ownTask(ctx context.Context, id string) (*task, string) {
	t := m.task(id)
	if t == nil || t.handle() == nil {
		return nil, fmt.Sprintf("no running task %q (it may have finished: its result is, or will be, in a message)", id)
	}
	if sc := runner.ScopeOf(ctx); sc != nil && !m.ancestorOf(sc.SessionID(), t) {
		return nil, fmt.Sprintf("task %s was not started by this session", id)
	}
	return t, ""
}

// ancestorOf reports whether session started t or one of its ancestors.
func (m *Manager) ancestorOf(sessionID string, t *task) bool {
	for p := t; p != nil; p = p.parent {
		if p.ParentSessionID == sessionID {
			return true
		}
	}
	return false
}
