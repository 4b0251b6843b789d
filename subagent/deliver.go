package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// SpawnRecord is the Data of a subagent_spawned entry.
type SpawnRecord struct {
	TaskID         string `json:"taskId"`
	ChildSessionID string `json:"childSessionId"`
	Background     bool   `json:"background"`
	Agent          string `json:"agent"`
	Description    string `json:"description,omitempty"`
	ToolCallID     string `json:"toolCallId,omitempty"`
	Depth          int    `json:"depth"`
}

// ResultRecord is the Data of a subagent_result entry; a task has at most
// one.
type ResultRecord struct {
	TaskID     string    `json:"taskId"`
	Status     string    `json:"status"`
	Result     string    `json:"result"`
	Usage      llm.Usage `json:"usage"`
	DurationMs int64     `json:"durationMs"`
	Turns      int       `json:"turns,omitempty"`
	Agent      string    `json:"agent,omitempty"`
	Stopped    []string  `json:"stopped,omitempty"`
}

func spawnEntry(r SpawnRecord) session.Entry {
	b, _ := json.Marshal(r)
	return session.CustomEntry(SpawnedType, b)
}

func resultEntry(r ResultRecord) session.Entry {
	b, _ := json.Marshal(r)
	return session.CustomEntry(ResultType, b)
}

func record(t *task, out Outcome) ResultRecord {
	return ResultRecord{TaskID: t.ID, Status: out.Status, Result: out.Text, Usage: out.Usage,
		DurationMs: out.Duration.Milliseconds(), Turns: out.Turns, Agent: t.Agent, Stopped: out.Stopped}
}

// Notification is the message a background result is delivered as.
func Notification(r ResultRecord, description string, limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<task-notification task=%q status=%q agent=%q>\n", r.TaskID, r.Status, r.Agent)
	fmt.Fprintf(&b, "<summary>%s</summary>", html.EscapeString(summary(r, description)))
	fmt.Fprintf(&b, "<result>%s</result>", html.EscapeString(capText(r.Result, limit)))
	fmt.Fprintf(&b, "<usage input=%d output=%d durationMs=%d/></task-notification>", r.Usage.Input, r.Usage.Output, r.DurationMs)
	return b.String()
}

func summary(r ResultRecord, description string) string {
	s := fmt.Sprintf("Agent %q %s", description, r.Status)
	if len(r.Stopped) > 0 {
		s += "; stopped first: " + strings.Join(r.Stopped, ", ")
	}
	return s
}

// notificationMarker starts a notification of task id in a message.
func notificationMarker(id string) string { return fmt.Sprintf("<task-notification task=%q", id) }

// ledger is what a transcript says about its tasks.
type ledger struct {
	spawns    []SpawnRecord
	results   map[string]ResultRecord
	delivered map[string]bool // a notification message is in the transcript
}

func readLedger(tr *session.Transcript) ledger {
	l := ledger{results: map[string]ResultRecord{}, delivered: map[string]bool{}}
	if tr == nil {
		return l
	}
	for _, e := range tr.Entries {
		switch {
		case e.Type == session.EntryCustom && e.CustomType == SpawnedType:
			var r SpawnRecord
			if json.Unmarshal(e.Data, &r) == nil && r.TaskID != "" {
				l.spawns = append(l.spawns, r)
			}
		case e.Type == session.EntryCustom && e.CustomType == ResultType:
			var r ResultRecord
			if json.Unmarshal(e.Data, &r) == nil && r.TaskID != "" {
				l.results[r.TaskID] = r
			}
		case e.Type == session.EntryMessage && e.Message != nil && e.Message.Role == llm.RoleUser:
			text := e.Message.Text()
			if i := strings.Index(text, "<task-notification task=\""); i >= 0 {
				rest := text[i+len("<task-notification task=\""):]
				if j := strings.IndexByte(rest, '"'); j > 0 {
					l.delivered[rest[:j]] = true
				}
			}
		}
	}
	return l
}

func (l ledger) spawn(id string) (SpawnRecord, bool) {
	for _, s := range l.spawns {
		if s.TaskID == id {
			return s, true
		}
	}
	return SpawnRecord{}, false
}

// deliverForeground records a foreground task's result in the parent's
// transcript (the call's own result carries it to the model).
func (m *Manager) deliverForeground(ctx context.Context, sc *runner.Scope, t *task, out Outcome) {
	defer close(t.done)
	defer m.unregister(t)
	m.deliverMu.Lock()
	if _, done := readLedger(sc.Transcript()).results[t.ID]; !done {
		_, _ = sc.Append(ctx, resultEntry(record(t, out)))
	}
	m.deliverMu.Unlock()
	m.announce(sc, t, out)
}

// endInfo is t's subagent_end.
func endInfo(t *task, out Outcome) runner.Subagent {
	return runner.Subagent{TaskID: t.ID, ChildSessionID: t.SessionID, ParentToolCallID: t.ParentToolCallID, Agent: t.Agent,
		Background: t.Background, Depth: t.Depth, Description: t.Description, Status: out.Status, Usage: out.Usage,
		Duration: out.Duration, Turns: out.Turns}
}

// announce says on the parent's stream, and to its hooks, that t ended.
func (m *Manager) announce(sc *runner.Scope, t *task, out Outcome) {
	sc.Emit(endInfo(t, out))
	if bus := sc.Bus(); bus != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		path := transcriptPath(m.cfg.Store, t.SessionID)
		bus.SubagentStop(ctx, hook.SubagentEvent{AgentID: t.ID, AgentType: t.Agent, ChildSessionID: t.SessionID,
			TranscriptPath: path, LastAssistantMessage: out.Text, Status: out.Status})
	}
}

func transcriptPath(store session.Store, id string) string {
	if r, ok := store.(interface{ Resolve(string) (string, error) }); ok {
		if p, err := r.Resolve(id); err == nil {
			return p
		}
	}
	return ""
}

// deliverBackground delivers a background task's result to its parent
// session, exactly once: to the parent's run when one is going (a steer,
// read at its next turn boundary), else appended under the parent's lock
// with a follow-up run.
func (m *Manager) deliverBackground(t *task, out Outcome) {
	defer close(t.done)
	defer m.unregister(t)
	if m.cfg.BeforeDeliver != nil {
		m.cfg.BeforeDeliver(t.ID)
	}
	m.deliver(t, out, false)
}

// deliver is deliverBackground's work; announced says the task's
// subagent_end was sent already.
func (m *Manager) deliver(t *task, out Outcome, announced bool) {
	rec := record(t, out)
	note := Notification(rec, t.Description, m.cfg.ResultLimit)
	for range 50 {
		if run := m.activeRun(t.ParentSessionID); run != nil {
			sc := run.Scope()
			m.deliverMu.Lock()
			l := readLedger(sc.Transcript())
			_, hasResult := l.results[t.ID]
			if hasResult && l.delivered[t.ID] {
				m.deliverMu.Unlock()
				return
			}
			wrote := hasResult
			if !wrote {
				_, err := sc.Append(context.Background(), resultEntry(rec))
				wrote = err == nil
			}
			steered := wrote && run.Steer(note)
			m.deliverMu.Unlock()
			if steered {
				if !announced {
					m.announce(sc, t, out)
				}
				// A run that ends before it reads the steer (aborted
				// mid-reply) loses it: once the run is over, what its
				// transcript lacks is delivered to the idle session. The
				// task itself is over now (agent_stop must not wait for
				// its parent's run).
				m.wg.Add(1)
				go func() {
					defer m.wg.Done()
					<-run.Done()
					m.deliver(t, out, true)
				}()
				return
			}
			// The run is ending: deliver to the idle session after it.
			<-run.Done()
			continue
		}
		err := m.deliverIdle(t, out, rec, note, announced)
		if errors.Is(err, errBusy) {
			time.Sleep(20 * time.Millisecond) // a run took the session between the two checks
			continue
		}
		return
	}
}

var errBusy = errors.New("the session is busy")

// activeRun returns the run going on a session in this process.
func (m *Manager) activeRun(sessionID string) *runner.Run {
	for _, r := range m.cfg.Runner.Active() {
		if r.SessionID() == sessionID {
			return r
		}
	}
	return nil
}

// deliverIdle appends what is missing of a result (its entry, its
// notification) under the session's lock, then starts a follow-up run that
// reads it.
func (m *Manager) deliverIdle(t *task, out Outcome, rec ResultRecord, note string, announced bool) error {
	ctx := context.Background()
	sessionID := t.ParentSessionID
	m.deliverMu.Lock()
	appended, depth, err := m.appendUnderLock(ctx, sessionID, &session.LockOptions{Wait: true, Timeout: 5 * time.Second}, func(l ledger) []session.Entry {
		var es []session.Entry
		if _, ok := l.results[rec.TaskID]; !ok {
			es = append(es, resultEntry(rec))
		}
		if !l.delivered[rec.TaskID] {
			es = append(es, session.MessageEntry(llm.UserText(note)))
		}
		return es
	})
	m.deliverMu.Unlock()
	if err != nil {
		return err
	}
	if !appended || announced && depth > 0 {
		// (A child whose run ended without reading a steered result, as
		// one stopped after its own children, keeps it in its transcript
		// but is not run again: its answer would go nowhere.)
		return nil
	}
	var end *runner.Event
	if !announced {
		info := endInfo(t, out)
		end = &runner.Event{Type: runner.EventSubagentEnd, SessionID: sessionID, Subagent: &info}
	}
	if depth == 0 && m.cfg.FollowUp != nil {
		m.cfg.FollowUp(sessionID, end)
		return nil
	}
	// No run is going to carry the subagent_end: it goes first on the
	// stream of the follow-up runs.
	if m.cfg.OnFollowUp != nil && end != nil {
		m.cfg.OnFollowUp(*end)
	}
	m.followUp(sessionID, depth)
	return nil
}

// appendUnderLock opens a session (taking its lock), reads its ledger and
// appends what plan returns. It reports whether a message was appended,
// and the session's depth. A session another run holds is errBusy.
func (m *Manager) appendUnderLock(ctx context.Context, sessionID string, lock *session.LockOptions, plan func(ledger) []session.Entry) (bool, int, error) {
	if m.activeRun(sessionID) != nil {
		return false, 0, errBusy
	}
	sess, err := m.cfg.Store.Open(ctx, sessionID, lock)
	if err != nil {
		if m.activeRun(sessionID) != nil {
			return false, 0, errBusy
		}
		return false, 0, fmt.Errorf("open session %s to deliver a result: %w", sessionID, err)
	}
	defer sess.Close()
	msg := false
	for _, e := range plan(readLedger(sess.Transcript())) {
		if _, err := sess.Append(ctx, e); err != nil {
			return msg, sess.Header().Depth, fmt.Errorf("deliver to session %s: %w", sessionID, err)
		}
		msg = msg || e.Type == session.EntryMessage
	}
	if err := sess.EndTurn(); err != nil {
		return msg, sess.Header().Depth, err
	}
	return msg, sess.Header().Depth, nil
}

// followUp starts a run on an idle session that reads what was delivered.
func (m *Manager) followUp(sessionID string, depth int) {
	m.mu.Lock()
	q, parent := m.cfg.Child, m.cfg.Parent
	m.mu.Unlock()
	if depth == 0 && parent.Model != nil {
		q = parent
	} else {
		reg, err := m.childTools(Definition{Name: GeneralAgent}, depth)
		if err != nil {
			return
		}
		q.Tools = reg
	}
	q.Prompt, q.History, q.OnEvent = "", nil, nil
	q.Resume = true
	q.Session = runner.SessionSpec{ID: sessionID, Cwd: m.cfg.Cwd}
	q.Lane, q.ParentLane, q.SessionKey = runner.LaneMain, "", ""
	if depth > 0 {
		q.Lane = runner.LaneSubagent
		if t := m.taskOfSession(sessionID); t != nil && t.Depth > 1 {
			q.Lane = runner.LaneNested
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		run, err := m.cfg.Runner.Start(m.base, q)
		if err != nil {
			return
		}
		_, _ = drain(run, m.cfg.OnFollowUp)
	}()
}

// Settle settles the tasks of a session that this process is not running
// and that have no result: what a crash or a kill left. A child whose run
// finished gives its result; one that did not is interrupted. Background
// results are delivered (appended as their notification); the caller's
// run, opened next, reads them. It returns the tasks it settled. Call it
// when a session is opened for a run, before the run takes the lock.
func (m *Manager) Settle(ctx context.Context, sessionID string) ([]ResultRecord, error) {
	var settled []ResultRecord
	m.deliverMu.Lock()
	defer m.deliverMu.Unlock()
	// A session another run holds is not settled now: its holder owns it,
	// and whoever opens it next settles it.
	_, _, err := m.appendUnderLock(ctx, sessionID, nil, func(l ledger) []session.Entry {
		var es []session.Entry
		for _, sp := range l.spawns {
			if m.task(sp.TaskID) != nil {
				continue // still running here: it delivers itself
			}
			rec, has := l.results[sp.TaskID]
			if !has {
				rec = m.settledResult(ctx, sp)
				es = append(es, resultEntry(rec))
				settled = append(settled, rec)
			}
			if sp.Background && !l.delivered[sp.TaskID] {
				es = append(es, session.MessageEntry(llm.UserText(Notification(rec, sp.Description, m.cfg.ResultLimit))))
			}
		}
		return es
	})
	var locked *session.LockedError
	if errors.Is(err, errBusy) || errors.As(err, &locked) || errors.Is(err, session.ErrNotFound) {
		return nil, nil // (a session not written yet has nothing to settle)
	}
	return settled, err
}

// settledResult reads a child's transcript: a run that ended with a final
// answer is completed, anything else interrupted.
func (m *Manager) settledResult(ctx context.Context, sp SpawnRecord) ResultRecord {
	rec := ResultRecord{TaskID: sp.TaskID, Status: StatusInterrupted, Agent: sp.Agent,
		Result: "the agent was interrupted (the program stopped before it finished)"}
	tr, err := m.cfg.Store.Load(ctx, sp.ChildSessionID)
	if err != nil || tr == nil {
		return rec
	}
	var msgs []llm.Message
	for _, e := range tr.Entries {
		if e.Type == session.EntryMessage && e.Message != nil {
			msgs = append(msgs, *e.Message)
		}
	}
	for _, msg := range msgs {
		if msg.Role == llm.RoleAssistant {
			rec.Turns++
			if u := msg.Usage; u != nil {
				rec.Usage.Input += u.Input
				rec.Usage.Output += u.Output
			}
		}
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleAssistant && msgs[n-1].StopReason == llm.StopReasonStop {
		rec.Status = StatusCompleted
		rec.Result = finalText(msgs)
	}
	return rec
}
