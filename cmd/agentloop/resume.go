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
	path, err := store.Resolve(f.session)
	if err != nil {
		return cwd
	}
	t, err := session.LoadFile(path)
	if err != nil {
		return cwd
	}
	if hc := t.Header.Cwd; explicit && hc != "" && hc != cwd {
		fmt.Fprintf(env.stderr, "agentloop: session %s was recorded in %s; this run works in %s (--cwd %s to work there)\n",
			t.Header.ID, hc, cwd, hc)
	}
	last := t.Context("")
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
