package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// compactFlags are the flags of `agentloop compact`.
type compactFlags struct {
	session    string
	cwd        string
	sessionDir string
	model      string
	script     string
	baseURL    string
	modelsFile string
	trust      bool
	noHooks    bool
}

func newCompactCmd(env *cliEnv) *cobra.Command {
	f := &compactFlags{}
	cmd := &cobra.Command{
		Use:   "compact [flags] [instructions...]",
		Short: "Summarise a session's older history now, so the next run starts smaller",
		Long: `Summarise the older history of a session and store the summary in it: the next run on the
session (agentloop run --continue, or --session ID) sends the summary and the recent messages
instead of the whole history. The transcript keeps every entry; a compaction entry is appended.

The session is the latest of the working directory (--cwd, default the current one), or --session.
A session another run is writing is refused. The words after the flags are extra instructions for
the summary ("keep the API decisions"). The summary is written by --model, by default the model
the session last used. PreCompact and PostCompact hooks run as they do in a run.`,
		Example: `  agentloop compact
  agentloop compact --session 0193a2 "focus on the open bugs"
  agentloop compact --model anthropic/claude-haiku-4-5`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return compactSession(cmd.Context(), env, f, strings.Join(args, " "))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.session, "session", "", "the session to compact (id, prefix or file path); default: the latest of --cwd")
	fl.StringVar(&f.cwd, "cwd", "", "working directory whose latest session to compact, and where hooks run (default: the current directory)")
	fl.StringVar(&f.sessionDir, "session-dir", "", "where sessions are kept (default $AGENTLOOP_HOME/sessions)")
	fl.StringVarP(&f.model, "model", "m", "", "model that writes the summary, as provider/id; default: the session's last model")
	fl.StringVar(&f.script, "script", "", "JSON script for the faux model (docs/faux.md)")
	fl.StringVar(&f.baseURL, "base-url", "", "override the provider's base URL")
	fl.StringVar(&f.modelsFile, "models", "", "models file adding providers (default $AGENTLOOP_HOME/models.json)")
	fl.BoolVar(&f.trust, "trust", false, "trust the workspace for this command: run its hooks")
	fl.BoolVar(&f.noHooks, "no-hooks", false, "run no command hooks from settings files")
	return cmd
}

// compactSession is `agentloop compact`: it opens the session under its
// lock, summarises the history before the recent messages, and appends the
// compaction entry, as a run's compaction would.
func compactSession(ctx context.Context, env *cliEnv, f *compactFlags, instructions string) error {
	home, err := agentloopHome(env.getenv)
	if err != nil {
		return err
	}
	cwd, err := workspaceDir(f.cwd)
	if err != nil {
		return usageError{err}
	}
	dir := f.sessionDir
	if dir == "" {
		dir = filepath.Join(home, "sessions")
	}
	store := session.NewJSONLStore(dir)
	id := f.session
	if id == "" {
		info, err := session.Latest(ctx, store, cwd)
		if errors.Is(err, session.ErrNotFound) {
			return usageError{fmt.Errorf("no session for %s to compact: give --session ID (see \"agentloop sessions list --all\")", cwd)}
		}
		if err != nil {
			return err
		}
		id = info.ID
	}
	sess, err := store.Open(ctx, id, nil)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return sessionLookupError(id, err)
		}
		// A locked session: another run is writing it.
		return exitError{code: exitFailed, msg: describeError(err)}
	}
	defer sess.Close()
	for _, w := range sess.Warnings() {
		fmt.Fprintln(env.stderr, "agentloop: warning:", w)
	}
	if f.cwd == "" {
		// Hooks run where the session's runs ran, when that still exists.
		if hc := sess.Header().Cwd; hc != "" {
			if ws, err := workspaceDir(hc); err == nil {
				cwd = ws
			}
		}
	}
	history := sess.Context()
	if len(history.Messages) == 0 {
		fmt.Fprintf(env.stdout, "nothing to compact: session %s has no messages yet\n", sess.ID())
		return nil
	}

	spec := f.model
	if spec == "" && f.script == "" {
		if history.Provider == "" || history.ModelID == "" {
			return usageError{fmt.Errorf("session %s names no model: give the summariser with --model provider/id", sess.ID())}
		}
		spec = history.Provider + "/" + history.ModelID
	}
	rf := &runFlags{model: spec, script: f.script, baseURL: f.baseURL, modelsFile: f.modelsFile}
	resolved, err := resolveModel(ctx, env, rf, home, "", runner.ResolveIdleTimeout(-1, 0, 0, runner.LaneMain))
	if err != nil {
		return err
	}
	for _, w := range resolved.Warnings {
		fmt.Fprintln(env.stderr, "agentloop: warning:", w)
	}

	path := ""
	if fs, ok := sess.(interface{ Path() string }); ok {
		path = fs.Path()
	}
	bus, warns, err := hook.Load(hook.LoadOptions{Home: home, Workspace: cwd, ClaudeHome: claudeHome(env), Trust: f.trust, NoHooks: f.noHooks,
		SessionID: sess.ID(), TranscriptPath: path,
		BusOptions: &hook.Options{Report: func(_ context.Context, n hook.Notice) {
			text := n.Text
			if text == "" && n.Err != nil {
				text = n.Err.Error()
			}
			fmt.Fprintf(env.stderr, "agentloop: hook %s: %s\n", n.Hook, oneLine(text, 300))
		}}})
	if err != nil {
		return err
	}
	for _, w := range warns {
		fmt.Fprintln(env.stderr, "agentloop: warning:", w)
	}
	defer func() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if bus.Wait(wctx) != nil {
			fmt.Fprintln(env.stderr, "agentloop: warning: some hooks were still running when compaction ended")
		}
	}()

	done, err := runner.CompactSession(ctx, runner.CompactRequest{Session: sess, Model: resolved.Model,
		Window: resolved.Info.ContextWindow, Instructions: instructions, Bus: bus,
		Warn: func(msg string) { fmt.Fprintln(env.stderr, "agentloop: warning:", msg) }})
	if err != nil {
		var failed *runner.CompactFailedError
		switch {
		case ctx.Err() != nil:
			return exitError{code: exitInterrupted, msg: "interrupted: the session was left as it was"}
		case errors.Is(err, compact.ErrNothingToCompact):
			fmt.Fprintf(env.stdout, "nothing to compact: the %d messages of session %s are all recent (about %d tokens)\n",
				len(history.Messages), sess.ID(), compact.MessagesTokens(history.Messages))
			return nil
		case errors.As(err, &failed):
			msg := "compaction failed: nothing was summarised or dropped"
			if failed.Cause != nil {
				msg = "compaction failed: " + describeError(failed.Cause)
			}
			return exitError{code: exitFailed, msg: msg + "; the session was left as it was"}
		}
		return exitError{code: exitFailed, msg: "compaction failed: " + describeError(err)}
	}
	how := "summarised"
	if done.Fallback {
		how = "dropped without a summary"
	}
	fmt.Fprintf(env.stdout, "compacted session %s: %d messages %s; about %s tokens before, %s after\n",
		sess.ID(), done.DroppedMessages, how, count(done.TokensBefore), count(done.TokensAfter))
	return nil
}
