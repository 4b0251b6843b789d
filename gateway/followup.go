package gateway

import (
	"context"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// FollowUp is told that something a run must read (a background
// subagent's result and its notification, package subagent) was appended
// to an idle session: end, its event (nil: none to send), goes out on the
// session's stream and
// a run with no prompt (runner.Request.Resume) reads what was appended.
// When a run of the session is going or queued, no run is added for it now:
// a run that has not opened the session yet reads it, and after the last
// one ends, a follow-up run starts if the transcript still ends with a
// user message nobody answered. It is safe to call from any goroutine.
func (s *Server) FollowUp(sessionID string, end *runner.Event) {
	ss, e := s.session(sessionID)
	if e != nil {
		return // not a session of this server: its next run reads it
	}
	s.mu.Lock()
	if s.closing || ss.deleted {
		s.mu.Unlock()
		return // the transcript keeps it for the session's next run
	}
	var rs *runState
	if ss.active == nil && len(ss.queue) == 0 {
		rs = s.resumeRunLocked(ss)
	} else {
		ss.followUp = true
	}
	s.mu.Unlock()
	runID := ""
	if rs != nil {
		runID = rs.id
	}
	if end != nil {
		ev := *end
		s.emit(ss, string(ev.Type), runID, func(seq int64) []byte {
			ev.Seq, ev.RunID, ev.SessionID = seq, runID, ss.id
			return eventJSON(ev)
		})
	}
	if rs != nil {
		s.launch(rs)
	}
}

// resumeRunLocked makes a run without a prompt the session's active run
// (launch starts it). s.mu is held.
func (s *Server) resumeRunLocked(ss *sessionState) *runState {
	rs := &runState{id: "run_" + session.NewSessionID(), sess: ss, resume: true,
		createdAt: s.clk.Now().UTC(), status: RunQueued, finished: make(chan struct{})}
	s.runs[rs.id] = rs
	ss.active = rs
	ss.followUp = false
	s.wg.Add(1) // launch
	ss.emu.Lock()
	rs.afterSeq = ss.seq
	ss.emu.Unlock()
	return rs
}

// unanswered reports whether a session's transcript ends with a user
// message: something appended for a run that did not read it.
func (s *Server) unanswered(id string) bool {
	tr, err := s.cfg.Store.Load(context.Background(), id)
	if err != nil || tr == nil {
		return false
	}
	for i := len(tr.Entries) - 1; i >= 0; i-- {
		if e := tr.Entries[i]; e.Type == session.EntryMessage && e.Message != nil {
			return e.Message.Role == llm.RoleUser
		}
	}
	return false
}
