package gateway

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/session"
)

// Session is a session as the API shows it.
type Session struct {
	ID          string    `json:"id"`
	Cwd         string    `json:"cwd"`
	Model       string    `json:"model,omitempty"`
	Thinking    string    `json:"thinking,omitempty"`
	Label       string    `json:"label,omitempty"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt,omitzero"`
	ActiveRunID string    `json:"activeRunId,omitempty"`
	HeadSeq     int64     `json:"headSeq"`
	ParentID    string    `json:"parentId,omitempty"`
	Messages    int       `json:"messages"`
	Title       string    `json:"title,omitempty"`
}

// CreateSessionRequest is the body of POST /v1/sessions.
type CreateSessionRequest struct {
	Cwd      string `json:"cwd"`
	Model    string `json:"model,omitempty"`
	Thinking string `json:"thinking,omitempty"`
	Label    string `json:"label,omitempty"`
}

// SessionList is a page of sessions, the most recently updated first.
type SessionList struct {
	Sessions   []Session `json:"sessions"`
	NextCursor string    `json:"nextCursor,omitempty"`
}

// Deleter is implemented by stores that can delete a session
// (session.JSONLStore).
type Deleter interface {
	Delete(ctx context.Context, id string) error
}

// session returns the state of session id, reading it from the store the
// first time.
func (s *Server) session(id string) (*sessionState, *Error) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss != nil {
		return ss, nil
	}
	if id == "" || strings.ContainsAny(id, `/\`) {
		return nil, errorf(CodeNotFound, "no session %q", id)
	}
	tr, err := s.cfg.Store.Load(context.Background(), id)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) && s.cl.node != nil {
			return s.clusterSession(id, "")
		}
		if errors.Is(err, session.ErrNotFound) {
			return nil, errorf(CodeNotFound, "no session %q", id)
		}
		return nil, errorf(CodeInternal, "read session %s: %v", id, err)
	}
	if tr.Header.ID != id { // a prefix: the API names sessions by their full id
		return nil, errorf(CodeNotFound, "no session %q", id)
	}
	created, _ := time.Parse(time.RFC3339Nano, tr.Header.Timestamp)
	ss = &sessionState{id: id, cwd: tr.Header.Cwd, created: created, persisted: true, idem: map[string]idemEntry{}}
	if p := tr.Header.ParentSession; p != "" {
		ss.parentID = sessionIDOfPath(p)
	}
	ss.seq = s.loadSeq(id, tr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.sessions[id]; old != nil {
		return old, nil
	}
	s.sessions[id] = ss
	return ss, nil
}

// sessionIDOfPath is the id in a JSONL transcript's file name
// ("<time>_<id>.jsonl").
func sessionIDOfPath(p string) string {
	b := strings.TrimSuffix(filepath.Base(p), ".jsonl")
	if _, id, ok := strings.Cut(b, "_"); ok {
		return id
	}
	return b
}

// isPersisted reports whether the store has the session, looking when it
// did not before (the first run of a new session may have just written
// it).
func (s *Server) isPersisted(ctx context.Context, ss *sessionState) bool {
	s.mu.Lock()
	p := ss.persisted
	s.mu.Unlock()
	if p {
		return true
	}
	if !s.inStore(ctx, ss.id) {
		return false
	}
	s.mu.Lock()
	ss.persisted = true
	s.mu.Unlock()
	return true
}

// inStore reports whether the store holds session id: by a stat where
// the store can find a session's file without reading it
// (session.JSONLStore.Resolve), else by loading it.
func (s *Server) inStore(ctx context.Context, id string) bool {
	if r, ok := s.cfg.Store.(interface{ Resolve(string) (string, error) }); ok {
		_, err := r.Resolve(id)
		return err == nil
	}
	_, err := s.cfg.Store.Load(ctx, id)
	return err == nil
}

// statusLocked is a session's status. s.mu is held.
func (ss *sessionState) statusLocked() string {
	if ss.active == nil {
		return StatusIdle
	}
	if ss.active.status == StatusRequiresAction {
		return StatusRequiresAction
	}
	return StatusRunning
}

// view describes a session; s.mu is held.
func (s *Server) viewLocked(ss *sessionState) Session {
	v := Session{ID: ss.id, Cwd: ss.cwd, Model: ss.model, Thinking: ss.thinking, Label: ss.label,
		Status: ss.statusLocked(), CreatedAt: ss.created, ParentID: ss.parentID}
	if ss.active != nil {
		v.ActiveRunID = ss.active.id
	}
	ss.emu.Lock()
	v.HeadSeq = ss.seq
	ss.emu.Unlock()
	return v
}

// CreateSession makes a session. It is kept in memory until its first
// run writes its first message.
func (s *Server) CreateSession(ctx context.Context, req CreateSessionRequest) (Session, *Error) {
	if s.stopping() {
		return Session{}, errorf(CodeUnavailable, "the server is shutting down")
	}
	if req.Cwd == "" {
		req.Cwd = s.cfg.Cwd
	}
	if req.Cwd == "" {
		return Session{}, errorf(CodeInvalidRequest, "cwd is required: the directory the session works in")
	}
	if !filepath.IsAbs(req.Cwd) {
		return Session{}, errorf(CodeInvalidRequest, "cwd %q is not an absolute path", req.Cwd)
	}
	if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
		return Session{}, errorf(CodeInvalidRequest, "cwd %s is not a directory", req.Cwd)
	}
	if e := s.checkSettings(ctx, req.Model, req.Thinking); e != nil {
		return Session{}, e
	}
	ss := &sessionState{id: session.NewSessionID(), cwd: filepath.Clean(req.Cwd), label: req.Label, model: req.Model,
		thinking: req.Thinking, created: s.clk.Now().UTC(), idem: map[string]idemEntry{}}
	if s.cl.node != nil { // every node knows it, not only this one
		if err := s.cl.node.Declare(ctx, ss.id, ss.cwd); err != nil {
			return Session{}, errorf(CodeUnavailable, "%v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[ss.id] = ss
	return s.viewLocked(ss), nil
}

// GetSession describes one session.
func (s *Server) GetSession(ctx context.Context, id string) (Session, *Error) {
	ss, e := s.session(id)
	if e != nil {
		return Session{}, e
	}
	persisted := s.isPersisted(ctx, ss)
	s.mu.Lock()
	v := s.viewLocked(ss)
	s.mu.Unlock()
	if persisted {
		if st, ok := s.stats(ctx, id); ok {
			v.Messages, v.Title = st.Messages, st.Title
		}
	}
	return v, nil
}

// SessionPage is a session with a page of its transcript entries: GET
// /v1/sessions/{id} with ?limit= or ?cursor=.
type SessionPage struct {
	Session
	Entries []session.Entry `json:"entries"`
	// NextCursor is the cursor= of the next page, "" at the end.
	NextCursor string `json:"nextCursor,omitempty"`
}

// GetSessionPage describes a session with the entries of its transcript
// after the entry cursor ("" from the start), limit at a time (as
// Messages).
func (s *Server) GetSessionPage(ctx context.Context, id, cursor string, limit int) (SessionPage, *Error) {
	v, e := s.GetSession(ctx, id)
	if e != nil {
		return SessionPage{}, e
	}
	page, e := s.Messages(ctx, id, cursor, limit)
	if e != nil {
		return SessionPage{}, e
	}
	return SessionPage{Session: v, Entries: page.Entries, NextCursor: page.NextAfter}, nil
}

// Infoer is implemented by stores that describe one session without
// reading its transcript whole (session.JSONLStore, from its cached
// summaries).
type Infoer interface {
	Info(ctx context.Context, id string) (session.Info, error)
}

// stats are a session's totals: from the store's Info when it has one,
// else from the whole transcript.
func (s *Server) stats(ctx context.Context, id string) (session.Stats, bool) {
	if in, ok := s.cfg.Store.(Infoer); ok {
		info, err := in.Info(ctx, id)
		return info.Stats, err == nil
	}
	tr, err := s.cfg.Store.Load(ctx, id)
	if err != nil {
		return session.Stats{}, false
	}
	return tr.Stats(), true
}

// ListSessions lists the sessions of cwd ("" all), the most recently
// updated first, limit at a time (default 50, at most 500) from cursor.
func (s *Server) ListSessions(ctx context.Context, cwd string, limit int, cursor string) (SessionList, *Error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 500)
	off := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return SessionList{}, errorf(CodeInvalidRequest, "cursor %q is not one this server gave", cursor)
		}
		off = n
	}
	infos, err := s.cfg.Store.List(ctx, cwd)
	if err != nil {
		return SessionList{}, errorf(CodeInternal, "list sessions: %v", err)
	}
	seen := map[string]bool{}
	var all []Session
	s.mu.Lock()
	for _, in := range infos {
		seen[in.ID] = true
		v := Session{ID: in.ID, Cwd: in.Cwd, Status: StatusIdle, CreatedAt: in.Created, UpdatedAt: in.Updated,
			Messages: in.Messages, Title: in.Title}
		if in.ParentSession != "" {
			v.ParentID = sessionIDOfPath(in.ParentSession)
		}
		if ss := s.sessions[in.ID]; ss != nil {
			live := s.viewLocked(ss)
			v.Model, v.Thinking, v.Label, v.Status, v.ActiveRunID, v.HeadSeq = live.Model, live.Thinking, live.Label, live.Status, live.ActiveRunID, live.HeadSeq
		}
		all = append(all, v)
	}
	for _, ss := range s.sessions {
		if !seen[ss.id] && !ss.persisted && (cwd == "" || ss.cwd == cwd) {
			v := s.viewLocked(ss)
			v.UpdatedAt = ss.created
			all = append(all, v)
		}
	}
	s.mu.Unlock()
	slices.SortStableFunc(all, func(a, b Session) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	out := SessionList{Sessions: []Session{}}
	if off < len(all) {
		end := min(off+limit, len(all))
		out.Sessions = all[off:end]
		if end < len(all) {
			out.NextCursor = strconv.Itoa(end)
		}
	}
	return out, nil
}

// ForkSession copies session id up to leafID ("" the last entry) into a
// new session.
func (s *Server) ForkSession(ctx context.Context, id, leafID string) (Session, *Error) {
	ss, e := s.session(id)
	if e != nil {
		return Session{}, e
	}
	persisted := s.isPersisted(ctx, ss)
	s.mu.Lock()
	cwd, model, thinking := ss.cwd, ss.model, ss.thinking
	s.mu.Unlock()
	if !persisted {
		return Session{}, errorf(CodeInvalidRequest, "session %s has no messages yet: there is nothing to fork", id)
	}
	nid, err := s.cfg.Store.Fork(ctx, id, leafID, session.CreateOptions{Cwd: cwd})
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return Session{}, errorf(CodeNotFound, "fork %s: %v", id, err)
		}
		return Session{}, errorf(CodeInvalidRequest, "fork %s: %v", id, err)
	}
	ns, e := s.session(nid)
	if e != nil {
		return Session{}, e
	}
	s.mu.Lock()
	ns.parentID, ns.model, ns.thinking = id, model, thinking
	v := s.viewLocked(ns)
	s.mu.Unlock()
	return v, nil
}

// DeleteSession aborts the session's runs, ends its streams and deletes
// it.
func (s *Server) DeleteSession(ctx context.Context, id string) *Error {
	ss, e := s.session(id)
	if e != nil {
		return e
	}
	if e := s.clusterBusy(ctx, ss); e != nil {
		return e
	}
	s.mu.Lock()
	ss.deleted = true // no run starts on it from here
	queued := ss.queue
	ss.queue = nil
	active := ss.active
	s.mu.Unlock()
	for _, rs := range queued {
		s.finishUnstarted(rs, "aborted", "the session was deleted")
	}
	if active != nil {
		s.abortRun(active)
		if !active.wait(ctx) {
			return errorf(CodeUnavailable, "the session's run did not stop in time; try again")
		}
	}
	if s.isPersisted(ctx, ss) {
		d, ok := s.cfg.Store.(Deleter)
		if !ok {
			return errorf(CodeInvalidRequest, "this server's session store cannot delete sessions")
		}
		var before *session.Transcript
		if s.cfg.OnDelete != nil {
			before, _ = s.cfg.Store.Load(ctx, id)
		}
		if err := d.Delete(ctx, id); errors.Is(err, session.ErrLocked) {
			s.mu.Lock()
			ss.deleted = false // it is still there
			s.mu.Unlock()
			return errorf(CodeSessionBusy, "session %s is in use elsewhere (%v); delete it when its run has ended", id, err)
		} else if err != nil && !errors.Is(err, session.ErrNotFound) {
			return errorf(CodeInternal, "delete session %s: %v", id, err)
		}
		if before != nil {
			if err := s.cfg.OnDelete(ctx, before); err != nil {
				s.cfg.Logger.Warn("session deleted, but not its external engine's own session", "session", id, "err", err)
			}
		}
	}
	s.mu.Lock()
	delete(s.sessions, id)
	// Its runs go too (with the ids of their answered approvals): they
	// would stay in memory for good otherwise.
	for rid, rs := range s.runs {
		if rs.sess == ss {
			delete(s.runs, rid)
			for _, ap := range rs.answered {
				delete(s.resolved, ap)
			}
		}
	}
	ss.ended = nil
	s.mu.Unlock()
	ss.cancelExpiry()
	ss.emu.Lock()
	subs := ss.subs
	ss.subs = nil
	ss.emu.Unlock()
	for sub := range subs {
		sub.mu.Lock()
		sub.endLocked(errClosed)
		sub.mu.Unlock()
	}
	if p := s.seqPath(id); p != "" {
		_ = os.Remove(p)
	}
	return nil
}

// Messages returns the transcript entries of a session after the entry
// after ("" from the start), limit at a time (default 100, at most 1000).
func (s *Server) Messages(ctx context.Context, id, after string, limit int) (MessagePage, *Error) {
	ss, e := s.session(id)
	if e != nil {
		return MessagePage{}, e
	}
	persisted := s.isPersisted(ctx, ss)
	page := MessagePage{Entries: []session.Entry{}}
	if !persisted {
		return page, nil
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	tr, err := s.cfg.Store.Load(ctx, id)
	if err != nil {
		return MessagePage{}, errorf(CodeInternal, "read session %s: %v", id, err)
	}
	start := 0
	if after != "" {
		i := slices.IndexFunc(tr.Entries, func(en session.Entry) bool { return en.ID == after })
		if i < 0 {
			return MessagePage{}, errorf(CodeInvalidRequest, "session %s has no entry %q", id, after)
		}
		start = i + 1
	}
	end := min(start+limit, len(tr.Entries))
	page.Entries = tr.Entries[start:end]
	if end < len(tr.Entries) && end > 0 {
		page.NextAfter = tr.Entries[end-1].ID
	}
	return page, nil
}

// MessagePage is a page of a session's transcript entries.
type MessagePage struct {
	Entries []session.Entry `json:"entries"`
	// NextAfter is the after= of the next page, "" at the end.
	NextAfter string `json:"nextAfter,omitempty"`
}
