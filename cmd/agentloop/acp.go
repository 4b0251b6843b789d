package main

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/gateway/acp"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

func newACPCmd(env *cliEnv) *cobra.Command {
	f := &runFlags{}
	var offered []string
	cmd := &cobra.Command{
		Use:   "acp [flags]",
		Short: "Serve an editor over the Agent Client Protocol (stdin/stdout)",
		Long: `Serve an editor (Zed, JetBrains, Emacs...) over the Agent Client Protocol, ACP v1: JSON-RPC
on stdin and stdout, diagnostics on stderr. The editor starts this command itself; see
docs/editors.md for its settings.

Each editor session is an agentloop session (agentloop sessions list shows it; session/load
replays it). The flags are those of agentloop run: they choose the model, the tools, the hooks,
the MCP servers (the editor's own servers are added to them) and the limits of every run.
--approve defaults to ask here: a tool call that could change something waits for the
editor's permission dialog.`,
		Example: `  agentloop acp --model anthropic/claude-sonnet-4-5
  agentloop acp --model faux/demo            # offline, for trying an editor's setup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.idleGiven = cmd.Flags().Changed("idle-timeout")
			return serveACP(cmd.Context(), env, f, offered)
		},
	}
	fl := cmd.Flags()
	addModelFlags(fl, f)
	addToolFlags(fl, f)
	addLimitFlags(fl, f)
	// An editor has a permission dialog: ask is the default here.
	f.approve = tool.ApprovalModeAsk
	fl.Lookup("approve").DefValue = tool.ApprovalModeAsk
	fl.StringSliceVar(&offered, "offer-model", nil, "models (provider/id, comma-separated) the editor may switch to, besides --model")
	return cmd
}

// serveACP is `agentloop acp`: package gateway/acp on stdin and stdout,
// each prompt a run prepared as agentloop run prepares one.
func serveACP(ctx context.Context, env *cliEnv, f *runFlags, offered []string) error {
	home, err := agentloopHome(env.getenv)
	if err != nil {
		return err
	}
	if err := checkRunFlags(f); err != nil {
		return usageError{err}
	}
	if _, err := tool.ApprovalPolicyFor(f.approve); err != nil {
		return usageError{err}
	}
	thinking, idle, err := f.thinkingAndIdle()
	if err != nil {
		return err
	}
	// stdout is the protocol: whatever the run's setup would print goes
	// to stderr, and nobody is asked on the terminal.
	quiet := *env
	quiet.stdout, quiet.stdinIsTerminal = env.stderr, false
	store := session.NewJSONLStore(sessionsDir(f, home))

	// prepare is run's preparation of one run in the session's cwd, with
	// the editor's settings.
	prepare := func(ctx context.Context, s acp.Session, set acp.Settings) (*runPlan, error) {
		g := *f
		if set.Model != "" {
			g.model = set.Model
		}
		if set.Mode != "" {
			g.approve = set.Mode
		}
		th := thinking
		if set.Thinking != "" {
			th = set.Thinking
		}
		resolved, err := resolveModel(ctx, &quiet, &g, home, th, runner.ResolveIdleTimeout(idle, g.timeout, 0, runner.LaneMain))
		if err != nil {
			return nil, errors.New(setupErrorText(err))
		}
		plan, err := prepareRun(ctx, &quiet, &g, home, s.Cwd, resolved, th, idle)
		if err != nil {
			return nil, errors.New(setupErrorText(err))
		}
		return plan, nil
	}
	// The agent tools: one subagent Manager per editor session, on the
	// session's Runner. A background result that reaches an idle session
	// waits in its transcript for the editor's next prompt (an editor
	// starts every turn itself).
	var agents *sessionAgents
	var rmu sync.Mutex
	runners := map[string]*runner.Runner{} // the Runner Open gave each session
	if !f.noTools && !f.noAgents {
		agents = newSessionAgents(env, f, home, store)
		agents.followUp = func(string, *runner.Event) {}
		defer agents.close()
	}
	models := slices.Compact(append([]string{f.model}, offered...))
	if models[0] == "" {
		models = models[1:]
	}
	cfg := acp.Config{
		Store: store,
		Open: func(ctx context.Context, s acp.Session) (*runner.Runner, error) {
			plan, err := prepare(ctx, s, acp.Settings{})
			if err != nil {
				return nil, err
			}
			plan.spill.close() // the Runner's Config is all Open keeps
			rc := plan.cfg
			rc.Store = store
			if !f.noMCP && !f.noTools && len(s.MCP.Servers) > 0 {
				rc.ToolSources = withEditorServers(rc.ToolSources, s.MCP, plan.toolEnv)
			}
			rn, err := runner.New(rc)
			if err == nil {
				rmu.Lock()
				runners[s.ID] = rn
				rmu.Unlock()
			}
			return rn, err
		},
		Release: func(s acp.Session, rn *runner.Runner) {
			rmu.Lock()
			if runners[s.ID] == rn {
				delete(runners, s.ID)
			}
			rmu.Unlock()
			if agents != nil {
				agents.release(s.ID, rn)
			}
		},
		Request: func(ctx context.Context, s acp.Session, set acp.Settings) (acp.Run, error) {
			plan, err := prepare(ctx, s, set)
			if err != nil {
				return acp.Run{}, err
			}
			if len(plan.q.FallbackModels) == 0 {
				if err := checkLocalServer(plan.q.Info); err != nil {
					plan.spill.close()
					return acp.Run{}, err
				}
			}
			rmu.Lock()
			rn := runners[s.ID]
			rmu.Unlock()
			if agents != nil && rn != nil {
				if err := agents.add(ctx, rn, s.ID, s.Cwd, &plan.q); err != nil {
					plan.spill.close()
					return acp.Run{}, err
				}
			}
			return acp.Run{Request: plan.q, Done: plan.spill.close}, nil
		},
		Compact: func(ctx context.Context, s acp.Session, set acp.Settings, instructions string) (string, error) {
			var out strings.Builder
			cf := &compactFlags{session: s.ID, cwd: s.Cwd, sessionDir: sessionsDir(f, home), model: set.Model,
				script: f.script, baseURL: f.baseURL, modelsFile: f.modelsFile, trust: f.trust, noHooks: f.noHooks}
			cenv := quiet
			cenv.stdout = &out
			if err := compactSession(ctx, &cenv, cf, instructions); err != nil {
				return "", errors.New(setupErrorText(err))
			}
			return strings.TrimSpace(out.String()), nil
		},
		Models: models, Model: f.model, Mode: f.approve,
		Name: "agentloop", Version: version(),
	}
	return acp.Serve(ctx, cfg, env.stdin, env.stdout)
}

// withEditorServers adds the editor's MCP servers to the run's own: into
// its MCP source when it has one (a server of the same name stays the
// user's), else as a source of their own.
func withEditorServers(sources []tool.Source, editor mcp.Config, toolEnv toolEnvSettings) []tool.Source {
	out := slices.Clone(sources)
	for i, src := range out {
		if ms, ok := src.(*mcp.Source); ok {
			merged := *ms
			merged.Config.Servers = maps.Clone(ms.Config.Servers)
			for name, sc := range editor.Servers {
				if _, dup := merged.Config.Servers[name]; !dup {
					merged.Config.Servers[name] = sc
				}
			}
			out[i] = &merged
			return out
		}
	}
	return append(out, &mcp.Source{Config: editor, Options: mcpOptions(toolEnv)})
}

// setupErrorText is what an editor shows of a run that could not be set
// up: the sentence of a usage or exit error, without its exit code.
func setupErrorText(err error) string {
	var ue usageError
	if errors.As(err, &ue) {
		return ue.err.Error()
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.msg
	}
	return describeError(err)
}
