package runner

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentloop/agentloop/session"
)

// The run's session: which one, before the lanes (session.go), and its
// history's mirror (transcript.go).

// resolveSession picks the run's session id before the lanes (they are
// keyed by it); the session is opened, under its lock, after them, so runs
// of one process queue instead of failing on each other's lock.
func (s *run) resolveSession(ctx context.Context) (sessID, source string, create bool, err error) {
	p := &s.p
	store := p.Store
	if store == nil {
		return "", "", false, nil
	}
	if p.Session.Cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			p.Session.Cwd = wd
		}
	}
	switch {
	case p.Session.Fork != "":
		id, err := store.Fork(ctx, p.Session.Fork, "", session.CreateOptions{Cwd: p.Session.Cwd})
		if err != nil {
			return "", "", false, fmt.Errorf("fork session %s: %w", p.Session.Fork, err)
		}
		sessID, source = id, "resume"
	case p.Session.ID != "" && p.Session.New:
		sessID, source, create = p.Session.ID, "startup", true
	case p.Session.ID != "":
		sessID, source = p.Session.ID, "resume"
	case p.Session.Continue:
		info, err := session.Latest(ctx, store, p.Session.Cwd)
		switch {
		case errors.Is(err, session.ErrNotFound):
			s.warnings = append(s.warnings, "no earlier session in this directory to continue: starting a new one")
		case err != nil:
			return "", "", false, fmt.Errorf("find the latest session: %w", err)
		default:
			sessID, source = info.ID, "resume"
		}
	}
	if sessID == "" {
		sessID, source, create = session.NewSessionID(), "startup", true
	}
	return sessID, source, create, nil
}
