package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/command"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// CommandRequest is the body of POST /v1/sessions/{id}/command: a slash
// command of the shared table (package command) offered on the gateway.
type CommandRequest struct {
	Name string `json:"name"`
	Args string `json:"args,omitempty"`
}

// CommandResult says what a command did.
type CommandResult struct {
	Name    string  `json:"name"`
	Text    string  `json:"text"`
	Session Session `json:"session"`
}

// Command runs a slash command on a session: compact, model, thinking.
func (s *Server) Command(ctx context.Context, id string, req CommandRequest) (CommandResult, *Error) {
	name := strings.TrimPrefix(strings.TrimSpace(req.Name), "/")
	spec, ok := command.Lookup(name)
	if !ok || !spec.Offered(command.Gateway) {
		var names []string
		for _, c := range command.All(command.Gateway) {
			names = append(names, c.Name)
		}
		return CommandResult{}, errorf(CodeInvalidRequest, "/%s is not a command of the server; it has %s", name, strings.Join(names, ", "))
	}
	ss, e := s.session(id)
	if e != nil {
		return CommandResult{}, e
	}
	args := strings.TrimSpace(req.Args)
	res := CommandResult{Name: name}
	switch name {
	case command.Model:
		if args != "" {
			if e := s.checkSettings(ctx, args, ""); e != nil {
				return CommandResult{}, e
			}
			s.mu.Lock()
			ss.model = args
			s.mu.Unlock()
			res.Text = "the next runs of the session use " + args
		} else {
			s.mu.Lock()
			m := ss.model
			s.mu.Unlock()
			if m == "" {
				m = "the server's default model"
			}
			res.Text = "the session's runs use " + m
		}
	case command.Thinking:
		if _, ok := llm.ParseThinkingLevel(args); !ok {
			return CommandResult{}, errorf(CodeInvalidRequest, "/thinking %s: use %s", args, spec.Args)
		}
		s.mu.Lock()
		ss.thinking = args
		s.mu.Unlock()
		res.Text = "the next runs of the session think at level " + args
	case command.Compact:
		s.mu.Lock()
		busy := ss.active != nil || len(ss.queue) > 0
		rs := RunSettings{SessionID: ss.id, Cwd: ss.cwd, Model: ss.model, Thinking: ss.thinking}
		s.mu.Unlock()
		persisted := s.isPersisted(ctx, ss)
		if busy {
			return CommandResult{}, errorf(CodeSessionBusy, "session %s has a run in progress; compact it when the run has ended", ss.id)
		}
		if e := s.clusterBusy(ctx, ss); e != nil {
			return CommandResult{}, e
		}
		if !persisted {
			res.Text = "nothing to compact: the session has no messages yet"
			break
		}
		compactFn := s.cfg.Compact
		if compactFn == nil {
			compactFn = s.compact
		}
		text, err := compactFn(ctx, rs, args)
		if errors.Is(err, session.ErrLocked) {
			return CommandResult{}, errorf(CodeSessionBusy, "session %s is in use elsewhere (%v); compact it when its run has ended", ss.id, err)
		}
		if err != nil {
			return CommandResult{}, errorf(CodeInternal, "compact: %v", err)
		}
		res.Text = text
	default:
		return CommandResult{}, errorf(CodeInvalidRequest, "/%s is not run by the server", name)
	}
	s.mu.Lock()
	res.Session = s.viewLocked(ss)
	s.mu.Unlock()
	return res, nil
}

// Children lists the sessions forked or spawned from session id.
func (s *Server) Children(ctx context.Context, id string) (SessionList, *Error) {
	if _, e := s.session(id); e != nil {
		return SessionList{}, e
	}
	all, e := s.ListSessions(ctx, "", 500, "")
	if e != nil {
		return SessionList{}, e
	}
	out := SessionList{Sessions: []Session{}}
	for _, v := range all.Sessions {
		if v.ParentID == id {
			out.Sessions = append(out.Sessions, v)
		}
	}
	return out, nil
}

// compact is the compact command when Config.Compact is nil: the model of
// the session's next run (Prepare's) summarises the session, under its
// lock, with runner.CompactSession.
func (s *Server) compact(ctx context.Context, rs RunSettings, instructions string) (string, error) {
	q, err := s.cfg.Prepare(ctx, rs)
	if err != nil {
		return "", err
	}
	sess, err := s.cfg.Store.Open(ctx, rs.SessionID, nil)
	if err != nil {
		return "", err
	}
	defer sess.Close()
	rec, err := runner.CompactSession(ctx, runner.CompactRequest{Session: sess, Model: q.Model, Window: q.Info.ContextWindow,
		Instructions: instructions})
	if errors.Is(err, compact.ErrNothingToCompact) {
		return "nothing to compact: the session's messages are all recent", nil
	}
	if err != nil {
		return "", err
	}
	how := "summarised"
	if rec.Fallback {
		how = "dropped without a summary"
	}
	return fmt.Sprintf("compacted: %d messages %s; about %d tokens before, %d after", rec.DroppedMessages, how,
		rec.TokensBefore, rec.TokensAfter), nil
}
