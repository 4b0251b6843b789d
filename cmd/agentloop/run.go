package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/provider"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/prompt"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/builtin"
	"github.com/agentloop/agentloop/tool/mcp"
)

// runFlags are the flags of `agentloop run`.
type runFlags struct {
	model              string
	script             string
	baseURL            string
	modelsFile         string
	thinking           string
	json               bool
	cwd                string
	maxTurns           int
	systemPrompt       string
	appendSystemPrompt string

	tools   []string
	noTools bool
	// noAgents offers no agent tools; agentDepth is how deep they nest.
	noAgents   bool
	agentDepth int
	profile    string
	readOnly   bool
	approve    string
	sandbox    bool

	noSession  bool
	cont       bool
	session    string
	fork       string
	sessionDir string

	trust     bool
	noHooks   bool
	mcpConfig []string
	noMCP     bool

	toolSearch        string
	toolSearchPercent float64

	maxCost     float64
	maxTokens   int
	timeout     time.Duration
	idleTimeout time.Duration
	idleGiven   bool // --idle-timeout was on the command line
	retryBase   time.Duration
	noLoopGuard bool
	fallbacks   []string
	harness     string

	// Claude Code's print mode (ccformat.go, resume.go).
	outputFormat    string
	inputFormat     string
	verbose         bool
	disallowedTools []string
	resume          string
	print           bool
	resultShown     bool // a json or stream-json result line was written

	// chat, when set, takes over once the run is set up: agentloop chat
	// (chat.go) runs its turns on the one Runner instead of one Run.
	chat func(ctx context.Context, c *chatSetup) error
}

func newRunCmd(env *cliEnv) *cobra.Command {
	cmd, _ := runCommand(env)
	return cmd
}

// runCommand is `agentloop run` and its flags, which agentloop chat shares.
func runCommand(env *cliEnv) (*cobra.Command, *runFlags) {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] [prompt...]",
		Short: "Run the agent on one prompt",
		Long: `Run the agent on one prompt until it answers.

The prompt is the arguments joined by spaces; piped stdin follows them after a blank line
("-" reads it in place), and a word @path naming a file of the workspace includes it (an image
as an image); the prompt's own text is sent as typed. The assistant's text streams to stdout;
each tool call and a final usage line go to stderr. With --json, every event is one JSON
line on stdout (docs/protocol.md).

Exit codes: 0 success, 1 the run failed (max turns included), 2 usage error, 130 interrupted.`,
		Example: `  agentloop run --model faux/demo "what is in this folder?"
  git diff | agentloop run --model anthropic/claude-sonnet-4-5 "review this diff"
  agentloop run "summarise @README.md"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.idleGiven = cmd.Flags().Changed("idle-timeout")
			return printSetupError(env, f, runAgent(cmd.Context(), env, f, args))
		},
	}
	fl := cmd.Flags()
	addRunFlags(fl, f)
	fl.StringVar(&f.harness, "harness", "", "run the turn on another agent engine: builtin (default), claude-code, pi or acp:<command> (docs/harnesses.md)")
	addClaudeFlags(fl, f)
	return cmd, f
}

// addRunFlags adds the flags of a run (output, sessions, model, tools,
// approval, limits) to fl: agentloop run's, and agentloop serve's for its
// runs.
func addRunFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.BoolVar(&f.json, "json", false, "print every event as one JSON line")
	fl.StringVar(&f.cwd, "cwd", "", "workspace root (default: the current directory)")
	fl.BoolVar(&f.noSession, "no-session", false, "do not keep a transcript of this run")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the latest session of this directory")
	fl.StringVar(&f.session, "session", "", "continue the session with this id (or prefix, or file path)")
	fl.StringVar(&f.fork, "fork", "", "copy the session with this id and continue the copy")
	addModelFlags(fl, f)
	addToolFlags(fl, f)
	addLimitFlags(fl, f)
}

// addModelFlags adds the flags that choose and reach the model, shared by
// run and acp.
func addModelFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.StringVarP(&f.model, "model", "m", "", "model as provider/id (faux/demo runs offline); default: the first provider whose API key is set")
	fl.StringVar(&f.script, "script", "", "JSON script for the faux model (docs/faux.md)")
	fl.StringVar(&f.baseURL, "base-url", "", "override the provider's base URL")
	fl.StringVar(&f.modelsFile, "models", "", "models file adding providers (default $AGENTLOOP_HOME/models.json)")
	fl.StringVar(&f.thinking, "thinking", "", "thinking level: off, minimal, low, medium, high, xhigh")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 0, "fail a model call that sends nothing for this long (0: never; when not given, 120s)")
	fl.StringSliceVar(&f.fallbacks, "fallback", nil, "models (provider/id, comma-separated) to switch to, in order, when the model cannot serve the run; default: \"fallbacks\" of $AGENTLOOP_HOME/settings.json")
	fl.StringSliceVar(&f.fallbacks, "fallback-model", nil, "same as --fallback")
	_ = fl.MarkHidden("fallback-model")
	fl.DurationVar(&f.retryBase, "retry-base", 0, "first wait before retrying a transient failure (default 2s)")
	_ = fl.MarkHidden("retry-base") // for tests against scripted servers
}

// addToolFlags adds the flags that choose the tools, their approval, the
// hooks and the MCP servers, shared by run and acp.
func addToolFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.StringSliceVar(&f.tools, "tools", nil, "use exactly these tools (comma-separated)")
	fl.BoolVar(&f.noTools, "no-tools", false, "offer no tools")
	fl.StringVar(&f.profile, "profile", "coding", "tool profile: readonly, coding, full")
	fl.BoolVar(&f.readOnly, "read-only", false, "remove every tool that can change files")
	fl.StringVar(&f.approve, "approve", tool.ApprovalModeAuto, "tool approval: auto, ask, never")
	fl.BoolVar(&f.sandbox, "sandbox", false, "run bash inside a bubblewrap sandbox (Linux)")
	fl.BoolVar(&f.trust, "trust", false, "trust the workspace for this run: run its hooks and .mcp.json servers")
	fl.BoolVar(&f.noHooks, "no-hooks", false, "run no command hooks from settings files")
	fl.StringSliceVar(&f.mcpConfig, "mcp-config", nil, "also start the MCP servers of this .mcp.json file (repeatable)")
	fl.BoolVar(&f.noMCP, "no-mcp", false, "start no MCP servers")
	fl.BoolVar(&f.noLoopGuard, "no-loop-detection", false, "do not warn about or block a tool call repeated over and over")
	fl.BoolVar(&f.noAgents, "no-agents", false, "offer no agent tools (subagents)")
	fl.IntVar(&f.agentDepth, "agent-depth", subagent.DefaultMaxDepth, "how deep agents may nest (1-5)")
	fl.StringVar(&f.toolSearch, "tool-search", string(runner.ToolSearchAuto), "offer MCP tools through a tool_search tool: auto (when their definitions pass --tool-search-threshold of the context window), on, off")
	fl.Float64Var(&f.toolSearchPercent, "tool-search-threshold", runner.DefaultToolSearchPercent, "with --tool-search auto: the share of the context window, in percent, the tool definitions may take")
}

// addLimitFlags adds the flags that bound a run and shape its prompt, and
// where sessions are kept, shared by run and acp.
func addLimitFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.IntVar(&f.maxTurns, "max-turns", agent.DefaultMaxTurns, "stop after this many model calls (0: no limit)")
	fl.StringVar(&f.systemPrompt, "system-prompt", "", "replace the default system prompt")
	fl.StringVar(&f.appendSystemPrompt, "append-system-prompt", "", "append to the system prompt")
	fl.StringVar(&f.sessionDir, "session-dir", "", "where sessions are kept (default $AGENTLOOP_HOME/sessions)")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "stop the run once it has cost more than this many USD")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "stop the run once it has used more than this many tokens")
	fl.DurationVar(&f.timeout, "timeout", 0, "stop the run after this long (default 10m, extended once while compacting)")
}

// runAgent is `agentloop run`: it resolves what the flags name and hands
// the run to package runner.
func runAgent(ctx context.Context, env *cliEnv, f *runFlags, args []string) error {
	st, env := terminalStatus(env, f.json || f.outputFormat != formatText || f.chat != nil)
	if st != nil {
		st.start()
		defer st.stop()
	}
	home, err := agentloopHome(env.getenv)
	if err != nil {
		return err
	}
	cwd, err := workspaceDir(f.cwd)
	if err != nil {
		return usageError{err}
	}
	if err := claudeFlags(f, home, &args); err != nil {
		return usageError{err}
	}
	var up userPrompt
	if f.inputFormat != formatStreamJSON && f.chat == nil { // the prompts come on stdin, one a line
		if up, err = readPrompt(args, env.stdin, env.stdinIsPipe, cwd); err != nil {
			return err
		}
	}
	if err := checkRunFlags(f); err != nil {
		return usageError{err}
	}
	if !f.noSession && (f.cont || f.session != "") {
		cwd = resumeSession(ctx, env, f, session.NewJSONLStore(sessionsDir(f, home)), cwd)
	}
	thinking, idle, err := f.thinkingAndIdle()
	if err != nil {
		return err
	}
	resolved, err := resolveModel(ctx, env, f, home, thinking, runner.ResolveIdleTimeout(idle, f.timeout, 0, runner.LaneMain))
	if err != nil {
		return err
	}
	for _, w := range append(resolved.Warnings, imageWarning(up, resolved.Info)) {
		if w == "" {
			continue
		}
		fmt.Fprintln(env.stderr, "agentloop: warning:", w)
	}

	plan, err := prepareRun(ctx, env, f, home, cwd, resolved, thinking, idle)
	if err != nil {
		return err
	}
	defer plan.spill.close()
	cfg, q := plan.cfg, plan.q
	q.Prompt, q.Images = up.text, up.images
	if !f.noSession {
		q.Session.ID, q.Session.Continue, q.Session.Fork = f.session, f.cont, f.fork
	}
	if len(q.FallbackModels) == 0 {
		if err := checkLocalServer(resolved.Info); err != nil {
			return exitError{code: exitFailed, msg: err.Error()}
		}
	}

	rn, err := runner.New(cfg)
	if err != nil {
		return err
	}
	defer rn.Close()
	if f.chat != nil {
		c, err := newChatSetup(env, f, rn, q, cfg, home, cwd, len(cfg.ToolSources) > 0)
		if err != nil {
			return err
		}
		c.prompt = strings.Join(args, " ")
		return f.chat(ctx, c)
	}
	pr := newPrinter(env, f.json, resolved.Info)
	if cfg.Store != nil && !f.noTools && !f.noAgents {
		agents, err := newRunAgents(ctx, env, f, home, cwd, rn, cfg.Store, q.Tools, q, pr)
		if err != nil {
			return err
		}
		defer agents.finish(ctx, env)
	}
	pr.verbose = f.verbose
	pr.status = st
	q.OnEvent = pr.event
	if !f.json {
		q.OnEvent = (&promptGate{next: pr.event}).event
	}
	if f.outputFormat != formatText {
		return runClaudeFormat(ctx, env, f, rn, q, resolved.Info, home)
	}
	res, err := rn.Run(ctx, q)
	if err != nil {
		// The run could not start: a locked session, a bad session id, a
		// hook file that is not JSON, an interrupted wait in a lane.
		return startFailure(ctx, err, home)
	}
	if res.Reason == runner.ReasonPromptBlocked && !f.json {
		return blockedPrompt(res)
	}
	pr.finish(res)
	return runOutcome(ctx, res)
}

// thinkingAndIdle are --thinking's level ("" when not given) and the
// model calls' idle timeout (-1 when --idle-timeout was not given).
func (f *runFlags) thinkingAndIdle() (llm.ThinkingLevel, time.Duration, error) {
	var thinking llm.ThinkingLevel
	if f.thinking != "" {
		l, ok := llm.ParseThinkingLevel(f.thinking)
		if !ok {
			return "", 0, usageError{fmt.Errorf("--thinking %q: use one of off, minimal, low, medium, high, xhigh", f.thinking)}
		}
		thinking = l
	}
	idle := time.Duration(-1)
	if f.idleGiven {
		idle = f.idleTimeout
	}
	return thinking, idle, nil
}

// runPlan is a run prepared from the flags: the Runner's Config and the
// Request, and the spill directory the request's bash writes to (the
// caller closes it once the run is over).
type runPlan struct {
	cfg     runner.Config
	q       runner.Request
	spill   *runSpill
	toolEnv toolEnvSettings // what the tools' environment keeps out
}

// runRequest is the runner.Request of a run of the flags in the workspace
// cwd, without its prompt or session: its tools (their policy and the
// permission rules of the settings files), its approval, its system prompt
// and its limits. prepareRun makes one for agentloop run and acp; agentloop
// serve makes one per run.
func runRequest(ctx context.Context, env *cliEnv, f *runFlags, home, cwd string, resolved *provider.Resolved,
	thinking llm.ThinkingLevel, settings toolSettings, spill *runSpill) (runner.Request, error) {
	reg, err := buildTools(ctx, f, cwd, settings, spill)
	if err != nil {
		return runner.Request{}, err
	}
	policy, err := toolPolicy(f)
	if err != nil {
		return runner.Request{}, usageError{err}
	}
	rules, err := permissionRules(env, home, cwd, f.trust)
	if err != nil {
		return runner.Request{}, err
	}
	policy.Deny = append(policy.Deny, rules.DeniedTools()...)
	policy.Deny = append(policy.Deny, f.disallowedTools...) // a bare deny ("Bash") offers no such tool
	// The runner applies the policy to every tool once the MCP servers are
	// up; the built-in part is applied here too, for the system prompt and
	// to refuse a misspelt tool name before anything starts.
	offered, err := builtinPolicy(policy).Apply(reg)
	if err != nil {
		return runner.Request{}, usageError{err}
	}
	approval, err := newApproval(env, f.approve)
	if err != nil {
		return runner.Request{}, usageError{err}
	}
	// Permission rules of the settings files decide before --approve.
	if rules != nil {
		approval.Policy = rules.Policy(approval.Policy)
	}

	system, _, err := prompt.Build(prompt.Options{
		Tools: offered.Specs(), Workspace: cwd, Home: home,
		Replace: f.systemPrompt, Append: f.appendSystemPrompt,
	})
	if err != nil {
		return runner.Request{}, err
	}

	maxTurns := f.maxTurns
	if maxTurns == 0 {
		maxTurns = -1
	}
	q := runner.Request{
		Model: resolved.Model, Info: resolved.Info, Tools: reg, ToolPolicy: &policy,
		SystemPrompt: system, Options: llm.Options{Thinking: thinking}, MaxTurns: maxTurns,
		Approval: approval,
		Timeout:  f.timeout, MaxCost: f.maxCost, MaxTokens: f.maxTokens,
	}
	tsMode, _ := runner.ParseToolSearchMode(f.toolSearch) // checked by checkRunFlags
	q.ToolSearch = &runner.ToolSearch{Mode: tsMode, Percent: f.toolSearchPercent}
	if f.retryBase > 0 {
		q.Retry = &runner.RetryPolicy{Base: f.retryBase}
	}
	if q.Harness, q.HarnessFallback, err = chooseHarness(ctx, env, f, home, cwd, resolved.Info); err != nil {
		return runner.Request{}, err
	}
	return q, nil
}

// prepareRun builds the run the flags describe in workspace cwd, on the
// resolved model: its tools and their policy, approval, permission rules,
// system prompt, hooks, MCP servers, auth profiles, fallbacks and limits.
// The Request has no prompt yet, and a new session (run sets the one
// --continue, --session or --fork names). agentloop run and agentloop acp
// (once per prompt) share it.
func prepareRun(ctx context.Context, env *cliEnv, f *runFlags, home, cwd string, resolved *provider.Resolved, thinking llm.ThinkingLevel, idle time.Duration) (plan *runPlan, err error) {
	ok := false
	settings, err := settingsTools(home)
	if err != nil {
		return nil, err
	}
	keepKeysFromTools(env, f, home, resolved, &settings.ToolEnv)
	spill, err := newRunSpill()
	if err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			spill.close()
		}
	}()
	q, err := runRequest(ctx, env, f, home, cwd, resolved, thinking, settings, spill)
	if err != nil {
		return nil, err
	}
	cfg := runner.Config{
		Hooks: &hook.LoadOptions{Home: home, Workspace: cwd, ClaudeHome: claudeHome(env), Trust: f.trust, NoHooks: f.noHooks},
		// The run's own model writes the summaries of compaction: no Model
		// means the one the run is on, after a profile rotation or a
		// fallback too.
		Compaction: &runner.CompactionSpec{Summarizer: &compact.Summarizer{}},
	}
	cfg.ResolveModel = modelResolver(env, f, home, thinking, runner.ResolveIdleTimeout(idle, f.timeout, 0, runner.LaneMain))
	// Cooldowns and learned context windows live in
	// $AGENTLOOP_HOME/auth-state.json, shared with every other agentloop
	// process (and agentloop auth status).
	store, err := auth.Open(&auth.Config{Path: filepath.Join(home, auth.StateFileName)})
	if err != nil {
		return nil, err
	}
	cfg.Windows = store
	if profiles := authProfiles(f, home, resolved); len(profiles) > 1 {
		cfg.Auth = store
		q.AuthProfiles = profiles
		q.UseProfile = func(ctx context.Context, profile string) (llm.Model, llm.ModelInfo, error) {
			r, err := resolveModelProfile(ctx, env, f, home, thinking, runner.ResolveIdleTimeout(idle, f.timeout, 0, runner.LaneMain), profile)
			if err != nil {
				return nil, llm.ModelInfo{}, err
			}
			return r.Model, r.Info, nil
		}
	}
	q.FallbackModels = f.fallbacks
	if len(q.FallbackModels) == 0 {
		if q.FallbackModels, err = settingsFallbacks(home); err != nil {
			return nil, err
		}
	}
	if f.noLoopGuard {
		cfg.LoopGuard = &loopguard.Config{Disabled: true}
	}
	if !f.noSession {
		cfg.Store = session.NewJSONLStore(sessionsDir(f, home))
		q.Session = runner.SessionSpec{Cwd: cwd, Opened: spill.opened}
	}
	mcpServers, err := mcpSource(env, f, home, cwd, settings.ToolEnv)
	if err != nil {
		return nil, err
	}
	if mcpServers != nil {
		cfg.ToolSources = []tool.Source{mcpServers}
	}

	ok = true
	return &runPlan{cfg: cfg, q: q, spill: spill, toolEnv: settings.ToolEnv}, nil
}

// checkRunFlags refuses flag values and combinations that make no sense.
func checkRunFlags(f *runFlags) error {
	switch {
	case f.maxTurns < 0:
		return errors.New("--max-turns must be 0 (no limit) or more")
	case f.maxCost < 0:
		return errors.New("--max-cost must be a positive amount in USD")
	case f.maxTokens < 0:
		return errors.New("--max-tokens must be positive")
	case f.timeout < 0:
		return errors.New("--timeout must be 0 (the default, 10m) or more")
	case f.toolSearchPercent <= 0 || f.toolSearchPercent > 100:
		return errors.New("--tool-search-threshold must be a percentage above 0 and at most 100")
	}
	if _, err := runner.ParseToolSearchMode(f.toolSearch); err != nil {
		return fmt.Errorf("--tool-search %q: use auto, on or off", f.toolSearch)
	}
	n := 0
	for _, set := range []bool{f.cont, f.session != "", f.fork != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return errors.New("use only one of --continue, --session and --fork")
	}
	if n == 1 && f.noSession {
		return errors.New("--no-session cannot be combined with --continue, --session or --fork")
	}
	return nil
}

// mcpSource loads the MCP servers of a run: $AGENTLOOP_HOME/mcp.json, the
// workspace's .mcp.json when it is trusted, and --mcp-config files.
func mcpSource(env *cliEnv, f *runFlags, home, cwd string, toolEnv toolEnvSettings) (*mcp.Source, error) {
	if f.noMCP || f.noTools { // --no-tools offers none of their tools either
		return nil, nil
	}
	trusted := f.trust
	if !trusted {
		trusted, _ = hook.Trusted(home, cwd)
	}
	if !trusted && fileExists(filepath.Join(cwd, ".mcp.json")) {
		fmt.Fprintf(env.stderr, "agentloop: warning: %s is not trusted: its .mcp.json servers are not started (agentloop trust, or --trust for one run)\n", cwd)
	}
	cfg, err := mcp.Load(mcp.LoadOptions{Home: home, Workspace: cwd, TrustWorkspace: trusted, Files: f.mcpConfig})
	if err != nil {
		return nil, usageError{err}
	}
	if len(cfg.Servers) == 0 {
		return nil, nil
	}
	return &mcp.Source{Config: cfg, Options: mcpOptions(toolEnv)}, nil
}

// mcpOptions are the options of the user's MCP servers. The servers are
// the user's own (a trusted workspace, their home, a file they named, the
// editor they run): a tool they annotate readOnlyHint counts as read-only,
// for --read-only, the readonly profile, approval and early start alike.
// They run without the secrets of the environment.
func mcpOptions(toolEnv toolEnvSettings) *mcp.Options {
	return &mcp.Options{Logger: slog.New(slog.DiscardHandler), TrustAnnotations: true,
		EnvDeny: toolEnv.Deny, EnvAllow: toolEnv.Allow, Secrets: toolEnv.secrets}
}

// runOutcome maps how a run ended to the exit code.
func runOutcome(ctx context.Context, res runner.Result) error {
	switch res.Reason {
	case runner.ReasonStop:
		return nil
	case runner.ReasonAborted:
		if ctx.Err() != nil {
			return exitError{code: exitInterrupted, msg: "interrupted"}
		}
		return exitError{code: exitFailed, msg: "the run was aborted"}
	case runner.ReasonMaxTurns:
		return exitError{code: exitFailed, msg: "stopped: the run reached its turn limit (--max-turns)"}
	}
	msg := res.Message
	if msg == "" && res.Err != nil {
		msg = describeError(res.Err)
	}
	var pe *llm.ProviderError
	if errors.As(res.Err, &pe) {
		msg = withProviderDetail(msg, pe)
	}
	if msg == "" {
		msg = "the run failed (" + res.Reason + ")"
	}
	return exitError{code: exitFailed, msg: msg}
}

// describeError says what went wrong in words for people.
func describeError(err error) string {
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		return userMessage(pe)
	}
	return err.Error()
}

func workspaceDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("find the current directory: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--cwd %s: not a directory", dir)
	}
	return abs, nil
}

// buildTools assembles the tool set of a run: the file tools and bash,
// unfiltered (toolPolicy decides what is offered); --read-only leaves bash
// out and makes the workspace read-only. Bash runs without the secrets of
// the environment (see toolSettings).
func buildTools(ctx context.Context, f *runFlags, cwd string, settings toolSettings, spill *runSpill) (*tool.Registry, error) {
	toolEnv := settings.ToolEnv
	ws, err := builtin.NewWorkspace(cwd, &builtin.WorkspaceOptions{ReadOnly: f.readOnly, Readable: []string{spill.tmp}})
	if err != nil {
		return nil, err
	}
	spill.ws = ws
	tools := builtin.New(ws)
	if !f.readOnly {
		bo := builtin.BashOptions{Dir: ws.Root(), SpillDir: spill.tmp, EnvDeny: toolEnv.Deny, EnvAllow: toolEnv.Allow, Secrets: toolEnv.secrets}
		if f.sandbox {
			sb, err := builtin.NewSandbox()
			if err != nil {
				return nil, err
			}
			// Find out now, not at the model's first command, whether
			// bwrap can make its namespaces on this machine.
			if err := sb.Check(ctx); err != nil {
				return nil, fmt.Errorf("--sandbox: %w", err)
			}
			sb.Sockets = settings.Sandbox.Sockets
			bo.Sandbox = sb
		}
		spill.bash = builtin.NewBash(bo)
		tools = append(tools, spill.bash)
	}
	return tool.NewRegistry(tools...)
}

// toolPolicy is the one policy of the flags, over every tool of the run:
// built-in and MCP. --no-tools offers none; --tools exactly those named
// (MCP names included); otherwise the profile's built-in tools plus the
// MCP tools: all of them for coding and full, and for readonly (like
// --read-only) only those the server annotates readOnlyHint.
func toolPolicy(f *runFlags) (tool.Policy, error) {
	prof := tool.Profile(f.profile)
	switch prof {
	case tool.ProfileReadOnly, tool.ProfileCoding, tool.ProfileFull:
	default:
		return tool.Policy{}, fmt.Errorf("--profile %q: use readonly, coding or full", f.profile)
	}
	p := tool.Policy{Profile: prof, ReadOnly: f.readOnly || prof == tool.ProfileReadOnly}
	switch {
	case f.noTools:
		p.NoTools = true
	case len(f.tools) > 0:
		p.Tools = f.tools
	case prof != tool.ProfileFull:
		p.Allow = []string{mcpToolGlob}
	}
	return p, nil
}

// mcpToolGlob matches the name of every MCP tool.
var mcpToolGlob = mcp.ToolName("*", "*")

// builtinPolicy is p without the MCP tools it names, to apply to the
// built-in tools alone.
func builtinPolicy(p tool.Policy) tool.Policy {
	if p.Tools != nil {
		p.Tools = slices.DeleteFunc(slices.Clone(p.Tools), func(n string) bool {
			ok, _ := path.Match(mcpToolGlob, strings.TrimSpace(n))
			return ok
		})
	}
	p.Allow = slices.DeleteFunc(slices.Clone(p.Allow), func(n string) bool { return n == mcpToolGlob })
	return p
}

// newApproval builds the approval of one run; with --approve ask on a
// terminal it asks on stderr and reads the answer from stdin.
// Its ReadOnly is left to the runner, which knows the run's final tools,
// MCP tools included.
func newApproval(env *cliEnv, mode string) (*tool.Approval, error) {
	policy, err := tool.ApprovalPolicyFor(mode)
	if err != nil {
		return nil, err
	}
	a := &tool.Approval{Policy: policy}
	if env.stdinIsTerminal {
		a.Ask = tool.LineAsker(env.stdin, env.stderr)
	}
	return a, nil
}

// envVarName reports whether s is spelled like an environment variable
// (KeySource also says "models file" or "profile <id>").
func envVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// runSpill is where bash keeps the full output of long commands during
// one run: beside the transcript (<id>.spill/, mode 0700, files 0600),
// where it lives and goes with the session, once the session is open;
// without a session, a private temporary directory removed when the run
// ends. The read tool may read this run's directory only, not the spill
// logs of other sessions or workspaces.
type runSpill struct {
	tmp  string
	ws   *builtin.Workspace
	bash *builtin.Bash
}

func newRunSpill() (*runSpill, error) {
	dir, err := os.MkdirTemp("", "agentloop-spill-")
	if err != nil {
		return nil, fmt.Errorf("create a directory for long command output: %w", err)
	}
	return &runSpill{tmp: dir}, nil
}

// opened moves the spill directory beside the session's transcript.
func (s *runSpill) opened(_, path string) {
	if path == "" || s.ws == nil {
		return
	}
	dir := strings.TrimSuffix(path, ".jsonl") + ".spill"
	if err := s.ws.AddReadable(dir); err != nil {
		return // the temporary directory serves instead
	}
	if s.bash != nil {
		s.bash.SetSpillDir(dir)
	}
}

func (s *runSpill) close() { os.RemoveAll(s.tmp) }

// modelResolver is runner.Config.ResolveModel for the flags f: a model a
// hook or a fallback names, resolved as --model would resolve it.
func modelResolver(env *cliEnv, f *runFlags, home string, thinking llm.ThinkingLevel, idle time.Duration) func(context.Context, string, string) (llm.Model, llm.ModelInfo, error) {
	return func(ctx context.Context, prov, model string) (llm.Model, llm.ModelInfo, error) {
		g := *f
		g.model = prov + "/" + model
		r, err := resolveModel(ctx, env, &g, home, thinking, idle)
		if err != nil {
			return nil, llm.ModelInfo{}, err
		}
		return r.Model, r.Info, nil
	}
}
