package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/agentloop/agentloop/session"
)

// resumeSession settles, before the model is resolved, which session
// --continue or --session names and what it ran on:
//   - --continue looks for the latest session of cwd, then of each
//     directory above it, and picks the nearest one that has a session
//     (the run then works in that directory, unless --cwd was given);
//   - --session of a session recorded in another directory says so;
//   - without --model (or --script), the run goes on with the session's
//     last model, and without --thinking, its last thinking level.
//
// It returns the run's workspace. A session that cannot be found or read
// is left to the runner, which reports it as it always has.
func resumeSession(ctx context.Context, env *cliEnv, f *runFlags, store *session.JSONLStore, cwd string) string {
	explicit := f.session != ""
	if f.cont {
		for d := cwd; ; d = filepath.Dir(d) {
			info, err := session.Latest(ctx, store, d)
			if err == nil {
				f.session, f.cont = info.ID, false
				if d != cwd && f.cwd == "" {
					fmt.Fprintf(env.stderr, "agentloop: continuing session %s of %s, the nearest directory above with a session\n", info.ID, d)
					cwd = d
				}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if f.session == "" {
		return cwd
	}
	h, last, ok := sessionTail(ctx, store, f.session)
	if !ok {
		return cwd
	}
	if hc := h.Cwd; explicit && hc != "" && hc != cwd {
		fmt.Fprintf(env.stderr, "agentloop: session %s was recorded in %s; this run works in %s (--cwd %s to work there)\n",
			h.ID, hc, cwd, hc)
	}
	if f.model == "" && f.script == "" && last.Provider != "" && last.ModelID != "" {
		f.model = last.Provider + "/" + last.ModelID
	}
	if f.thinking == "" && last.ThinkingLevel != "" {
		f.thinking = string(last.ThinkingLevel)
	}
	return cwd
}

// sessionsDir is where a run keeps its sessions: --session-dir, else
// $AGENTLOOP_HOME/sessions.
func sessionsDir(f *runFlags, home string) string {
	if f.sessionDir != "" {
		return f.sessionDir
	}
	return filepath.Join(home, "sessions")
}

// sessionTail reads a session's header and its context at the leaf: from
// the tail of a long transcript when the session is free (Open reads no
// more), from the whole file when another run holds its lock.
func sessionTail(ctx context.Context, store *session.JSONLStore, id string) (session.Header, session.Context, bool) {
	if sess, err := store.Open(ctx, id, nil); err == nil {
		defer sess.Close()
		return sess.Header(), sess.Context(), true
	}
	path, err := store.Resolve(id)
	if err != nil {
		return session.Header{}, session.Context{}, false
	}
	t, err := session.LoadFile(path)
	if err != nil {
		return session.Header{}, session.Context{}, false
	}
	return t.Header, t.Context(""), true
}
