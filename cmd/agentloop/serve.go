package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/gateway"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// serveFlags are the flags of `agentloop serve`: where to listen and who
// may call, and the flags of `agentloop run` for every run it serves.
type serveFlags struct {
	run          runFlags
	listen       string
	tokenFile    string
	allowOrigins []string
	store        string
	stdio        bool
	bodyTimeout  time.Duration
	idleTimeout  time.Duration
	maxStreams   int
}

// defaultListen is the address agentloop serve listens on by default.
const defaultListen = "127.0.0.1:7420"

// serveShutdown bounds how long runs in progress may finish at exit.
const serveShutdown = 10 * time.Second

func newServeCmd(env *cliEnv) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve sessions over HTTP: a REST API, each session's events as SSE, approvals",
		Long: `Serve many sessions at once over HTTP (docs/gateway.md): create sessions, start runs on them,
steer, abort, answer tool approvals, and follow each session's events as Server-Sent Events
(protocol v2, the lines of agentloop run --json), resumable by Last-Event-ID.

It listens on 127.0.0.1:7420 by default, or on a Unix socket (--listen unix:///path). A listener
on loopback without --token-file lets every local process in; any other address needs
--token-file, whose lines are "read,write,approve <token>" (docs/security.md). A browser may call
only from the server's own address and the origins of --allow-origin.

Every run is made as agentloop run makes one, from the same flags: --model, --tools, --approve
(ask: the client answers, POST /v1/approvals/{id}) and the rest; a session's /model and /thinking
commands change its later runs. Ctrl-C lets the runs in progress finish for 10s, then aborts them.`,
		Example: `  agentloop serve --model faux/demo
  agentloop serve --listen 0.0.0.0:7420 --token-file ~/.agentloop/tokens --approve ask
  agentloop serve --listen unix:///run/agentloop.sock
  agentloop serve --stdio --model faux/demo    # JSON-RPC on stdin/stdout for a parent process`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.run.idleGiven = cmd.Flags().Changed("idle-timeout")
			for _, name := range []string{"json", "continue", "session", "fork", "no-session"} {
				if cmd.Flags().Changed(name) {
					return usageError{fmt.Errorf("--%s is a flag of one run: agentloop serve takes the session of each run from its request", name)}
				}
			}
			return serve(cmd.Context(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", defaultListen, "address to listen on: host:port, or unix:///path for a Unix socket")
	fl.StringVar(&f.tokenFile, "token-file", "", `bearer tokens, one a line: "read,write,approve <token>" (required off loopback)`)
	fl.StringVar(&f.store, "store", "", "where sessions are kept: postgres://user@host/db for PostgreSQL (schema migrated at start); default the session files")
	fl.StringSliceVar(&f.allowOrigins, "allow-origin", nil, "an Origin a browser may call from besides the server's own address (repeatable; * for any)")
	fl.DurationVar(&f.bodyTimeout, "body-timeout", gateway.DefaultBodyTimeout, "how long a request's body may take to arrive; beyond, 408 and the connection is closed (event streams and WebSockets are not bounded by it)")
	fl.DurationVar(&f.idleTimeout, "idle-conn-timeout", 2*time.Minute, "how long a kept-alive connection may wait for its next request")
	fl.IntVar(&f.maxStreams, "max-streams", gateway.DefaultMaxStreams, "event streams and WebSockets open at once; beyond, 503")
	fl.BoolVar(&f.stdio, "stdio", false, "speak the gateway's JSON-RPC on stdin and stdout (one JSON object a line) for the process that started this one, instead of listening")
	addRunFlags(fl, &f.run)
	for _, name := range []string{"json", "continue", "session", "fork", "no-session"} {
		_ = fl.MarkHidden(name)
	}
	return cmd
}

// serve is `agentloop serve`.
func serve(ctx context.Context, env *cliEnv, f *serveFlags) error {
	rf := &f.run
	if err := checkRunFlags(rf); err != nil {
		return usageError{err}
	}
	if f.stdio {
		if e := stdioFlagsError(f); e != nil {
			return usageError{e}
		}
	} else if !gateway.IsLoopback(f.listen) && f.tokenFile == "" {
		return usageError{fmt.Errorf("--listen %s is not a loopback address: give --token-file, so that only holders of a token can run agents on this machine (docs/security.md)", f.listen)}
	}
	var tokens gateway.TokenSet
	if f.tokenFile != "" {
		ts, err := gateway.LoadTokens(f.tokenFile)
		if err != nil {
			return usageError{err}
		}
		tokens = ts
	}
	home, err := agentloopHome(env.getenv)
	if err != nil {
		return err
	}
	cwd, err := workspaceDir(rf.cwd)
	if err != nil {
		return usageError{err}
	}
	thinking, idle, err := rf.thinkingAndIdle()
	if err != nil {
		return err
	}
	idle = runner.ResolveIdleTimeout(idle, rf.timeout, 0, runner.LaneMain)
	// The default model is resolved now, so a missing key or a misspelt
	// model stops the server before it listens.
	resolved, err := resolveModel(ctx, env, rf, home, thinking, idle)
	if err != nil {
		return err
	}
	for _, w := range resolved.Warnings {
		fmt.Fprintln(env.stderr, "agentloop: warning:", w)
	}
	settings, err := settingsTools(home)
	if err != nil {
		return err
	}
	fallbacks := rf.fallbacks
	if len(fallbacks) == 0 {
		if fallbacks, err = settingsFallbacks(home); err != nil {
			return err
		}
	}
	// Long command output goes beside each session's transcript; this
	// directory serves the moments before a session is open.
	spill, err := newRunSpill()
	if err != nil {
		return err
	}
	defer spill.close()

	store, node, storeAt, closeStore, err := openServeStore(ctx, env.getenv, f.store, sessionsDir(rf, home))
	if err != nil {
		return err
	}
	defer closeStore()
	drain, err := serveDrain(env.getenv, node)
	if err != nil {
		return err
	}
	cfg := runner.Config{
		Store:      store,
		Hooks:      &hook.LoadOptions{Home: home, Workspace: cwd, ClaudeHome: claudeHome(env), Trust: rf.trust, NoHooks: rf.noHooks},
		Compaction: &runner.CompactionSpec{Summarizer: &compact.Summarizer{}},
	}
	cfg.ResolveModel = modelResolver(env, rf, home, thinking, idle)
	authStore, err := auth.Open(&auth.Config{Path: filepath.Join(home, auth.StateFileName)})
	if err != nil {
		return err
	}
	cfg.Windows = authStore
	if rf.noLoopGuard {
		cfg.LoopGuard = &loopguard.Config{Disabled: true}
	}
	mcpServers, err := mcpSource(env, rf, home, cwd, settings.ToolEnv)
	if err != nil {
		return err
	}
	if mcpServers != nil {
		cfg.ToolSources = []tool.Source{mcpServers}
	}
	rn, err := runner.New(cfg)
	if err != nil {
		return err
	}
	defer rn.Close()

	// The agent tools: one subagent Manager per session, made at its
	// first run; a background result that reaches an idle session becomes
	// one of the gateway's runs (gw.FollowUp, set below).
	var agents *sessionAgents
	if !rf.noTools && !rf.noAgents {
		agents = newSessionAgents(env, rf, home, store)
	}
	// prepare makes each run the way agentloop run would, in the
	// session's directory, with the session's model and thinking level.
	prepare := func(ctx context.Context, rs gateway.RunSettings) (runner.Request, error) {
		g := *rf
		if rs.Model != "" {
			g.model = rs.Model
		}
		th := thinking
		if rs.Thinking != "" {
			th, _ = llm.ParseThinkingLevel(rs.Thinking)
		}
		r := resolved
		if rs.Model != "" || rs.Thinking != "" {
			if r, err = resolveModel(ctx, env, &g, home, th, idle); err != nil {
				return runner.Request{}, err
			}
		}
		st, err := settingsTools(home)
		if err != nil {
			return runner.Request{}, err
		}
		keepKeysFromTools(env, &g, home, r, &st.ToolEnv)
		sp := &runSpill{tmp: spill.tmp}
		q, err := runRequest(ctx, env, &g, home, rs.Cwd, r, th, st, sp)
		if err != nil {
			return runner.Request{}, err
		}
		q.Session.Opened = sp.opened
		q.FallbackModels = fallbacks
		if agents != nil {
			if err := agents.add(ctx, rn, rs.SessionID, rs.Cwd, &q); err != nil {
				return runner.Request{}, err
			}
		}
		return q, nil
	}
	gw, err := gateway.New(gateway.Config{
		Runner: rn, Store: store, Prepare: prepare, Cwd: cwd,
		CheckModel: func(ctx context.Context, model string) error {
			g := *rf
			g.model = model
			_, err := resolveModel(ctx, env, &g, home, thinking, idle)
			return err
		},
		// A deleted session takes the engines' own sessions it was bound to
		// with it, where the engine has a delete (pi, Claude Code), except
		// those another session (a fork) is bound to as well.
		OnDelete: func(ctx context.Context, t *session.Transcript) error {
			return harness.ForgetBindings(ctx, withoutShared(t, boundElsewhere(ctx, store, t), nil), engineByID(env))
		},
		Tokens: tokens, AllowOrigins: f.allowOrigins,
		StateDir:    filepath.Join(home, "gateway"),
		Cluster:     node,
		BodyTimeout: f.bodyTimeout, MaxStreams: f.maxStreams,
	})
	if err != nil {
		return err
	}
	if agents != nil {
		agents.followUp = gw.FollowUp
	}

	if f.stdio {
		return serveStdio(ctx, env, gw)
	}

	ln, where, err := listen(f.listen)
	if err != nil {
		return exitError{code: exitFailed, msg: err.Error()}
	}
	// No ReadTimeout or WriteTimeout: they would cut the event streams and
	// WebSockets, which live as long as their clients read. The gateway
	// bounds each request's body itself (--body-timeout).
	srv := &http.Server{Handler: gw.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: f.idleTimeout}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	open := ""
	if len(tokens) == 0 {
		open = ", no token needed (loopback)"
	}
	fmt.Fprintf(env.stderr, "agentloop serve: listening on %s%s; model %s/%s; sessions in %s\n",
		where, open, resolved.Info.Provider, resolved.Info.ID, storeAt)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdown)
	defer cancel()
	gctx, gcancel := context.WithTimeout(sctx, drain)
	defer gcancel()
	if err := gw.Shutdown(gctx); err != nil && node != nil {
		fmt.Fprintln(env.stderr, "agentloop serve: runs still going at shutdown were handed to another node")
	} else if err != nil {
		fmt.Fprintln(env.stderr, "agentloop serve: runs still going at shutdown were aborted")
	}
	if agents != nil {
		agents.close() // background agents left are stopped, their results written
	}
	_ = srv.Shutdown(sctx)
	if strings.HasPrefix(f.listen, "unix://") {
		os.Remove(strings.TrimPrefix(f.listen, "unix://"))
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return exitError{code: exitFailed, msg: "serve: " + serveErr.Error()}
	}
	return nil
}

// listen opens the listener of --listen and says where it is, as a URL.
func listen(addr string) (net.Listener, string, error) {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		if path == "" {
			return nil, "", errors.New("--listen unix:// needs a path: unix:///run/agentloop.sock")
		}
		ln, err := listenUnix(path)
		if err != nil {
			return nil, "", fmt.Errorf("listen on %s: %w", path, err)
		}
		return ln, addr, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, "http://" + ln.Addr().String(), nil
}

// listenUnix listens on a Unix socket at path that only this user can
// reach from its first moment: the socket is made in a private directory
// beside path, set to mode 0600, then linked to path (which fails, and
// clobbers nothing, when path exists) and unlinked from its first name.
func listenUnix(path string) (net.Listener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".agentloop-sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // its name moves to path
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Link(tmp, path); err != nil {
		ln.Close()
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s exists (a stale socket file? remove it)", path)
		}
		return nil, err
	}
	return ln, nil
}
