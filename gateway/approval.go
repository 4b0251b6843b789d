package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// The decisions on a pending action. allow_once runs the call, allow_session
// runs it and every later call of the same tool in the run, deny refuses
// it; timeout and cancelled are the server's.
const (
	DecisionAllowOnce    = "allow_once"
	DecisionAllowSession = "allow_session"
	DecisionDeny         = "deny"
	DecisionTimeout      = "timeout"
	DecisionCancelled    = "cancelled"
)

// PendingAction is a tool call waiting for a person's answer.
type PendingAction struct {
	ID         string          `json:"approvalId"`
	SessionID  string          `json:"sessionId"`
	RunID      string          `json:"runId"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Args       json.RawMessage `json:"args"`
	Reason     string          `json:"reason,omitempty"`
	// TaskID names the subagent task whose call it is (package
	// subagent): its child session's calls reach the root run's asker.
	TaskID    string    `json:"taskId,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Options   []string  `json:"options"`
	CreatedAt time.Time `json:"createdAt"`
}

// pendingAction is a PendingAction with its answer: resolved once, by
// compare-and-set under mu.
type pendingAction struct {
	PendingAction
	frame frame // its approval_requested, re-sent on every subscribe

	mu       sync.Mutex
	decision string
	message  string
	done     chan struct{}
}

// answered reports whether the action has its answer.
func (pa *pendingAction) answered() bool {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	return pa.decision != ""
}

// resolve answers the action; it reports false when it was answered
// already (the first answer wins).
func (pa *pendingAction) resolve(decision, message string) bool {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	if pa.decision != "" {
		return false
	}
	pa.decision, pa.message = decision, message
	close(pa.done)
	return true
}

var approvalOptions = []string{DecisionAllowOnce, DecisionAllowSession, DecisionDeny}

// asker is the tool.Asker of a run: it turns the question into a pending
// action and waits for its answer, its run's abort, or
// Config.ApprovalTimeout. A client that goes away changes nothing.
func (s *Server) asker(rs *runState) tool.Asker {
	return func(ctx context.Context, call tool.Call, reason string) (tool.Answer, error) {
		ss := rs.sess
		args := call.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		pa := &pendingAction{PendingAction: PendingAction{ID: "ap_" + session.NewSessionID(), SessionID: ss.id, RunID: rs.id,
			ToolCallID: call.ID, ToolName: call.Name, Args: args, Reason: reason, Options: approvalOptions,
			CreatedAt: s.clk.Now().UTC()}, done: make(chan struct{})}
		if o, ok := tool.OriginOf(ctx); ok {
			pa.TaskID, pa.Agent = o.TaskID, o.Agent
		}
		s.mu.Lock()
		if rs.pending == nil {
			rs.pending = map[string]*pendingAction{}
		}
		rs.pending[pa.ID] = pa
		s.approvals[pa.ID] = pa
		if !rs.ended {
			rs.status = StatusRequiresAction
		}
		s.mu.Unlock()
		// The action is listed before its event goes out, so a client that
		// sees the event can answer it at once.
		fields := map[string]any{"approvalId": pa.ID, "toolCallId": pa.ToolCallID, "toolName": pa.ToolName,
			"args": pa.Args, "options": pa.Options}
		if reason != "" {
			fields["text"] = reason
		}
		if pa.TaskID != "" {
			fields["taskId"], fields["agent"] = pa.TaskID, pa.Agent
		}
		if rs.claim != nil {
			// Listed in the database too, so any node takes its answer.
			req, _ := json.Marshal(pa.PendingAction)
			if err := s.cl.node.RequestAction(ctx, rs.claim, pa.ID, req); err != nil {
				s.resolveAction(pa, DecisionCancelled, "", "server")
				return tool.AnswerNo, err
			}
		}
		ss.emu.Lock()
		pa.frame = s.emitLocked(ss, EventApprovalRequested, rs.id, func(seq int64) []byte {
			return gatewayEvent(EventApprovalRequested, seq, rs.id, ss.id, fields)
		})
		ss.emu.Unlock()
		s.emitStatus(ss)

		var timeout <-chan time.Time
		if d := s.cfg.ApprovalTimeout; d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-pa.done:
		case <-ctx.Done():
			s.resolveAction(pa, DecisionCancelled, "", "server")
		case <-timeout:
			s.resolveAction(pa, DecisionTimeout, "", "server")
		}
		<-pa.done
		pa.mu.Lock()
		decision, msg := pa.decision, pa.message
		pa.mu.Unlock()
		switch decision {
		case DecisionAllowOnce:
			return tool.AnswerYes, nil
		case DecisionAllowSession:
			return tool.AnswerAlways, nil
		case DecisionTimeout:
			return tool.AnswerNo, fmt.Errorf("nobody answered within %s", s.cfg.ApprovalTimeout)
		case DecisionCancelled:
			return tool.AnswerNo, errors.New("the run was aborted while the call waited for approval")
		}
		if msg != "" {
			return tool.AnswerNo, fmt.Errorf("denied by the user: %s", msg)
		}
		return tool.AnswerNo, nil
	}
}

// resolveAction answers pa (compare-and-set) and, when this answer won,
// unlists it and sends approval_resolved. It reports whether it won.
func (s *Server) resolveAction(pa *pendingAction, decision, message, by string) bool {
	if !pa.resolve(decision, message) {
		return false
	}
	s.mu.Lock()
	delete(s.approvals, pa.ID)
	s.resolved[pa.ID] = struct{}{}
	rs := s.runs[pa.RunID]
	var ss *sessionState
	if rs != nil {
		delete(rs.pending, pa.ID)
		rs.answered = append(rs.answered, pa.ID)
		ss = rs.sess
		if len(rs.pending) == 0 && rs.status == StatusRequiresAction {
			rs.status = RunRunning
		}
	}
	s.mu.Unlock()
	if s.cl.node != nil && by == "server" {
		// A timeout or a cancel is the answer: a client's later one,
		// on any node, gets 409.
		d, _ := json.Marshal(ApprovalAnswer{Decision: decision})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = s.cl.node.Resolve(ctx, pa.ID, d)
		cancel()
	}
	if ss != nil {
		s.emitGateway(ss, EventApprovalResolved, pa.RunID, map[string]any{"approvalId": pa.ID, "toolCallId": pa.ToolCallID,
			"decision": decision, "by": by})
		s.emitStatus(ss)
	}
	return true
}

// cancelPending resolves every pending action of a run with decision.
func (s *Server) cancelPending(rs *runState, decision string) {
	s.mu.Lock()
	var list []*pendingAction
	for _, pa := range rs.pending {
		list = append(list, pa)
	}
	s.mu.Unlock()
	for _, pa := range list {
		s.resolveAction(pa, decision, "", "server")
	}
}

// pendingOf lists the pending actions of a session (of one run when runID
// is set), oldest first.
func (s *Server) pendingOf(ss *sessionState, runID string) []*pendingAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingOfLocked(ss, runID)
}

// pendingOfLocked is pendingOf with s.mu held.
func (s *Server) pendingOfLocked(ss *sessionState, runID string) []*pendingAction {
	var out []*pendingAction
	for _, pa := range s.approvals {
		if pa.SessionID == ss.id && (runID == "" || pa.RunID == runID) {
			out = append(out, pa)
		}
	}
	slices.SortFunc(out, func(a, b *pendingAction) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// Pending lists a run's pending actions.
func (s *Server) Pending(ctx context.Context, runID string) ([]PendingAction, *Error) {
	rs, e := s.runByID(runID)
	if e != nil && s.cl.node != nil { // held by another node
		return s.clusterPending(ctx, runID)
	}
	if e != nil {
		return nil, e
	}
	out := []PendingAction{}
	for _, pa := range s.pendingOf(rs.sess, runID) {
		out = append(out, pa.PendingAction)
	}
	return out, nil
}

// ApprovalAnswer is the body of POST /v1/approvals/{id}.
type ApprovalAnswer struct {
	Decision string `json:"decision"`
	Message  string `json:"message,omitempty"`
}

// Respond answers a pending action. A second answer is 409
// already_resolved.
func (s *Server) Respond(ctx context.Context, approvalID string, ans ApprovalAnswer) *Error {
	switch ans.Decision {
	case DecisionAllowOnce, DecisionAllowSession, DecisionDeny:
	default:
		return errorf(CodeInvalidRequest, "decision %q: use allow_once, allow_session or deny", ans.Decision)
	}
	if s.cl.node != nil {
		return s.respondCluster(ctx, approvalID, ans)
	}
	s.mu.Lock()
	pa := s.approvals[approvalID]
	s.mu.Unlock()
	if pa == nil {
		if s.wasApproval(approvalID) {
			return errorf(CodeAlreadyResolved, "approval %s was already resolved", approvalID)
		}
		return errorf(CodeNotFound, "no approval %q", approvalID)
	}
	if !s.resolveAction(pa, ans.Decision, ans.Message, "client") {
		return errorf(CodeAlreadyResolved, "approval %s was already resolved", approvalID)
	}
	return nil
}

// wasApproval reports whether id names an action of a run the server
// knows, resolved since.
func (s *Server) wasApproval(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.resolved[id]
	return ok
}
