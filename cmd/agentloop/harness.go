package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/acp"
	"github.com/agentloop/agentloop/harness/claudecode"
	"github.com/agentloop/agentloop/harness/pi"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/session"
)

// Environment variables naming the engines' executables (default: on PATH).
const (
	envClaudeCommand = "AGENTLOOP_CLAUDE"
	envPiCommand     = "AGENTLOOP_PI"
	// envPiModel names pi's model as pi's own models.json does (default:
	// the --model id).
	envPiModel = "AGENTLOOP_PI_MODEL"
	// envACPIdleWarn is how long an ACP agent may stay silent mid-turn
	// before a warning (a Go duration; default 5m).
	envACPIdleWarn = "AGENTLOOP_ACP_IDLE_WARN"
)

// harnessFor returns the harness --harness names: "" and "builtin" are the
// built-in loop (nil), "claude-code" and "pi" the engines of those names,
// "acp:<command line>" any ACP agent that command starts.
func harnessFor(env *cliEnv, name string) (harness.Harness, error) {
	h, err := engineNamed(env, name)
	if err != nil {
		return nil, fmt.Errorf("--harness %w", err)
	}
	return h, nil
}

// engineNamed is harnessFor for any place a harness is named (a flag, a
// variable, a settings key); its errors say what the name should be.
func engineNamed(env *cliEnv, name string) (harness.Harness, error) {
	switch {
	case name == "" || name == harness.BuiltinID:
		return nil, nil
	case name == claudecode.ID:
		return claudecode.New(&claudecode.Config{Command: env.getenv(envClaudeCommand), Trusted: trustedWorkspace(env)}), nil
	case name == pi.ID:
		return pi.New(&pi.Config{Command: env.getenv(envPiCommand), Model: env.getenv(envPiModel), Trusted: trustedWorkspace(env)}), nil
	case strings.HasPrefix(name, "acp:"):
		cfg, err := acp.Parse(name)
		if err != nil {
			return nil, err
		}
		if v := env.getenv(envACPIdleWarn); v != "" {
			if cfg.IdleWarn, err = time.ParseDuration(v); err != nil || cfg.IdleWarn <= 0 {
				return nil, fmt.Errorf("%s=%q: want a positive duration such as 30s", envACPIdleWarn, v)
			}
		}
		// An agent that takes only stdio MCP servers gets the run's tools
		// from this binary's hidden mcp-bridge command.
		if self, err := os.Executable(); err == nil {
			cfg.Bridge = []string{self, "mcp-bridge"}
		}
		return acp.New(cfg), nil
	}
	return nil, fmt.Errorf("%q: want builtin, claude-code, pi or acp:<command>", name)
}

// trustedWorkspace says whether the user trusts a workspace (agentloop
// trust): there an engine may load the workspace's own configuration.
func trustedWorkspace(env *cliEnv) func(cwd string) bool {
	return func(cwd string) bool {
		home, err := agentloopHome(env.getenv)
		if err != nil {
			return false
		}
		ok, _ := hook.Trusted(home, cwd)
		return ok
	}
}

// engineByID returns the external engine of a binding's harness id, for
// deleting the native sessions a deleted session was bound to.
func engineByID(env *cliEnv) func(id string) (harness.Harness, error) {
	return func(id string) (harness.Harness, error) {
		h, err := harnessFor(env, id)
		if err == nil && h == nil {
			err = fmt.Errorf("harness %q has no native sessions", id)
		}
		return h, err
	}
}

// newSessionsDeleteCmd is `agentloop sessions delete`.
func newSessionsDeleteCmd(env *cliEnv) *cobra.Command {
	var sf sessionFlags
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a session, and the external engines' sessions it was bound to",
		Long: `Deletes the session's transcript (ID or a unique prefix of it), then the sessions of the external
engines (--harness) it was ever bound to, where the engine has a delete: pi's session file, Claude
Code's session; one that another session (a fork) is bound to as well is kept. It asks nothing and prints what it deleted. A session whose run is live (its lock is
held) is refused and kept. An engine session that cannot be deleted is reported on stderr; the
session itself is gone either way.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			st, err := sf.store(env)
			if err != nil {
				return err
			}
			path, err := st.Resolve(args[0])
			if err != nil {
				return sessionLookupError(args[0], err)
			}
			t, err := session.LoadFile(path)
			if err != nil {
				return err
			}
			id := t.Header.ID
			shared := boundElsewhere(c.Context(), st, t)
			if err := st.Delete(c.Context(), id); err != nil {
				if le := (*session.LockedError)(nil); errors.As(err, &le) {
					return fmt.Errorf("not deleted: %w", le) // a live run
				}
				return err
			}
			fmt.Fprintf(env.stdout, "deleted session %s (%s)\n", id, path)
			own := withoutShared(t, shared, func(h, native, other string) {
				fmt.Fprintf(env.stdout, "kept its %s session %s (session %s is bound to it too)\n", h, native, other)
			})
			harness.ForgetEach(c.Context(), own, engineByID(env), func(b harness.Binding, err error) {
				switch {
				case err == nil:
					fmt.Fprintf(env.stdout, "deleted its %s session %s\n", b.Harness, b.NativeID)
				case errors.Is(err, harness.ErrNoForget):
					fmt.Fprintf(env.stdout, "kept its %s session %s (the engine has no delete)\n", b.Harness, b.NativeID)
				default:
					fmt.Fprintf(env.stderr, "agentloop: warning: session %s deleted, but not its %s session %s: %v\n", id, b.Harness, b.NativeID, err)
				}
			})
			return nil
		},
	}
	sf.add(cmd)
	return cmd
}

// newSessionsUnbindCmd is `agentloop sessions unbind`: the way out of a
// binding whose native session is gone.
func newSessionsUnbindCmd(env *cliEnv) *cobra.Command {
	var sf sessionFlags
	cmd := &cobra.Command{
		Use:   "unbind ID",
		Short: "Forget the external engine's session this session is bound to",
		Long: `A session run with --harness is bound to the engine's own session (Claude Code's session id),
which the next turn resumes. When that native session is gone the run fails and says so; unbind
appends an entry that clears the binding, so the next turn starts a new native session. The
transcript is kept.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			st, err := sf.store(env)
			if err != nil {
				return err
			}
			sess, err := st.Open(c.Context(), args[0], nil)
			if err != nil {
				if errors.Is(err, session.ErrNotFound) {
					return sessionLookupError(args[0], err)
				}
				return err
			}
			defer sess.Close()
			b := sess.Transcript().Binding(sess.Leaf())
			if b == nil {
				fmt.Fprintf(env.stdout, "session %s is not bound to an external engine\n", sess.ID())
				return nil
			}
			if _, err := sess.Append(c.Context(), session.HarnessBindingEntry(b.Harness, "", "", "")); err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "session %s is no longer bound to %s session %s\n", sess.ID(), b.Harness, b.NativeID)
			return nil
		},
	}
	sf.add(cmd)
	return cmd
}

func bindingKey(harness, native string) string { return harness + "\x00" + native }

// withoutShared returns t without the binding entries of the native
// sessions in shared (bindingKey → the other session bound to it), for
// harness.ForgetEach; kept is told of each once.
func withoutShared(t *session.Transcript, shared map[string]string, kept func(harness, native, other string)) *session.Transcript {
	own, told := *t, map[string]bool{}
	own.Entries = nil
	for _, e := range t.Entries {
		k := bindingKey(e.Harness, e.NativeID)
		if other := shared[k]; e.Type == session.EntryHarnessBinding && other != "" {
			if !told[k] && kept != nil {
				told[k] = true
				kept(e.Harness, e.NativeID, other)
			}
			continue
		}
		own.Entries = append(own.Entries, e)
	}
	return &own
}

// boundElsewhere returns, for each native session t was bound to that
// another session of st is bound to as well, that session's id. A fork
// copies its source's bindings, so both resume the engine's one session:
// deleting either must not take it from under the other.
func boundElsewhere(ctx context.Context, st session.Store, t *session.Transcript) map[string]string {
	mine := map[string]bool{}
	var natives [][]byte
	for _, e := range t.Entries {
		if k := bindingKey(e.Harness, e.NativeID); e.Type == session.EntryHarnessBinding && e.NativeID != "" && !mine[k] {
			mine[k] = true
			natives = append(natives, []byte(e.NativeID))
		}
	}
	if len(mine) == 0 {
		return nil
	}
	infos, _ := st.List(ctx, "")
	out := map[string]string{}
	for _, in := range infos {
		if in.ID == t.Header.ID || in.Path == "" {
			continue
		}
		data, err := os.ReadFile(in.Path)
		if err != nil || !slices.ContainsFunc(natives, func(n []byte) bool { return bytes.Contains(data, n) }) {
			continue // the cheap test first: most sessions name none of them
		}
		other, err := session.LoadFile(in.Path)
		if err != nil {
			continue
		}
		for _, e := range other.Entries {
			if k := bindingKey(e.Harness, e.NativeID); e.Type == session.EntryHarnessBinding && mine[k] && out[k] == "" {
				out[k] = in.ID
			}
		}
	}
	return out
}
