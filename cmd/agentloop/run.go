package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/prompt"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/builtin"
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

	tools    []string
	noTools  bool
	profile  string
	readOnly bool
	approve  string
	sandbox  bool
}

func newRunCmd(env *cliEnv) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] [prompt...]",
		Short: "Run the agent on one prompt",
		Long: `Run the agent on one prompt until it answers.

The prompt is the arguments joined by spaces; "-" (or no argument with a pipe on stdin)
reads stdin, and a word @path includes that file. The assistant's text streams to stdout;
each tool call and a final usage line go to stderr. With --json, every event is one JSON
line on stdout (docs/protocol.md).

Exit codes: 0 success, 1 the run failed (max turns included), 2 usage error, 130 interrupted.`,
		Example: `  agentloop run --model faux/demo "what is in this folder?"
  git diff | agentloop run --model anthropic/claude-sonnet-4-5 "review this diff"
  agentloop run "summarise @README.md"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd.Context(), env, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.model, "model", "m", "", "model as provider/id (faux/demo runs offline); default: the first provider whose API key is set")
	fl.StringVar(&f.script, "script", "", "JSON script for the faux model (docs/faux.md)")
	fl.StringVar(&f.baseURL, "base-url", "", "override the provider's base URL")
	fl.StringVar(&f.modelsFile, "models", "", "models file adding providers (default $AGENTLOOP_HOME/models.json)")
	fl.StringVar(&f.thinking, "thinking", "", "thinking level: off, minimal, low, medium, high, xhigh")
	fl.BoolVar(&f.json, "json", false, "print every event as one JSON line")
	fl.StringVar(&f.cwd, "cwd", "", "workspace root (default: the current directory)")
	fl.IntVar(&f.maxTurns, "max-turns", agent.DefaultMaxTurns, "stop after this many model calls (0: no limit)")
	fl.StringVar(&f.systemPrompt, "system-prompt", "", "replace the default system prompt")
	fl.StringVar(&f.appendSystemPrompt, "append-system-prompt", "", "append to the system prompt")
	fl.StringSliceVar(&f.tools, "tools", nil, "use exactly these tools (comma-separated)")
	fl.BoolVar(&f.noTools, "no-tools", false, "offer no tools")
	fl.StringVar(&f.profile, "profile", "coding", "tool profile: readonly, coding, full")
	fl.BoolVar(&f.readOnly, "read-only", false, "remove every tool that can change files")
	fl.StringVar(&f.approve, "approve", tool.ApprovalModeAuto, "tool approval: auto, ask, never")
	fl.BoolVar(&f.sandbox, "sandbox", false, "run bash inside a bubblewrap sandbox (Linux)")
	return cmd
}

// runAgent is `agentloop run`.
func runAgent(ctx context.Context, env *cliEnv, f *runFlags, args []string) error {
	home, err := agentloopHome(env.getenv)
	if err != nil {
		return err
	}
	cwd, err := workspaceDir(f.cwd)
	if err != nil {
		return usageError{err}
	}
	text, err := readPrompt(args, env.stdin, env.stdinIsPipe, cwd)
	if err != nil {
		return err
	}
	if f.maxTurns < 0 {
		return usageError{errors.New("--max-turns must be 0 (no limit) or more")}
	}
	var thinking llm.ThinkingLevel
	if f.thinking != "" {
		l, ok := llm.ParseThinkingLevel(f.thinking)
		if !ok {
			return usageError{fmt.Errorf("--thinking %q: use one of off, minimal, low, medium, high, xhigh", f.thinking)}
		}
		thinking = l
	}

	resolved, err := resolveModel(ctx, env, f, home, thinking)
	if err != nil {
		return err
	}
	for _, w := range resolved.Warnings {
		fmt.Fprintln(env.stderr, "agentloop: warning:", w)
	}

	reg, err := buildTools(f, cwd, home)
	if err != nil {
		return err
	}
	approval, err := newApproval(env, reg, f.approve)
	if err != nil {
		return usageError{err}
	}

	system, _, err := prompt.Build(prompt.Options{
		Tools: reg.Specs(), Workspace: cwd, Home: home,
		Replace: f.systemPrompt, Append: f.appendSystemPrompt,
	})
	if err != nil {
		return err
	}

	maxTurns := f.maxTurns
	if maxTurns == 0 {
		maxTurns = -1
	}
	cfg := agent.Config{
		Model:        resolved.Model,
		Tools:        reg,
		SystemPrompt: system,
		Options:      llm.Options{Thinking: thinking},
		MaxTurns:     maxTurns,
		Hooks: agent.Hooks{
			Approve: approval.Approve,
		},
	}
	a := agent.New(cfg)

	p := newPrinter(env, f.json, resolved.Info)
	var end *agent.Event
	for ev, err := range a.Run(ctx, llm.UserText(text)) {
		if err != nil {
			return err
		}
		p.event(ev)
		if ev.Type == agent.EventAgentEnd {
			e := ev
			end = &e
		}
	}
	p.finish()
	return runOutcome(ctx, end)
}

// runOutcome maps how a run ended to the exit code.
func runOutcome(ctx context.Context, end *agent.Event) error {
	if end == nil {
		return exitError{code: exitFailed, msg: "the run ended without a result"}
	}
	switch end.Reason {
	case agent.ReasonStop:
		return nil
	case agent.ReasonAborted:
		if ctx.Err() != nil {
			return exitError{code: exitInterrupted, msg: "interrupted"}
		}
		return exitError{code: exitFailed, msg: "the run was aborted"}
	case agent.ReasonMaxTurns:
		return exitError{code: exitFailed, msg: "stopped: the run reached its turn limit (--max-turns)"}
	}
	msg := "the run failed"
	if end.Err != nil {
		msg = describeError(end.Err)
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
// filtered by the profile, --tools, --no-tools and --read-only.
func buildTools(f *runFlags, cwd, home string) (*tool.Registry, error) {
	spill := filepath.Join(home, "spill")
	ws, err := builtin.NewWorkspace(cwd, &builtin.WorkspaceOptions{ReadOnly: f.readOnly, Readable: []string{spill}})
	if err != nil {
		return nil, err
	}
	tools := builtin.New(ws)
	if !f.readOnly {
		bo := builtin.BashOptions{Dir: ws.Root(), SpillDir: spill}
		if f.sandbox {
			sb, err := builtin.NewSandbox()
			if err != nil {
				return nil, err
			}
			bo.Sandbox = sb
		}
		tools = append(tools, builtin.NewBash(bo))
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		return nil, err
	}
	return applyToolPolicy(reg, f)
}

// applyToolPolicy keeps the tools the flags allow.
func applyToolPolicy(reg *tool.Registry, f *runFlags) (*tool.Registry, error) {
	switch tool.Profile(f.profile) {
	case tool.ProfileReadOnly, tool.ProfileCoding, tool.ProfileFull:
	default:
		return nil, usageError{fmt.Errorf("--profile %q: use readonly, coding or full", f.profile)}
	}
	p := tool.Policy{Profile: tool.Profile(f.profile), NoTools: f.noTools, ReadOnly: f.readOnly}
	if len(f.tools) > 0 {
		p.Tools = f.tools
	}
	out, err := p.Apply(reg)
	if err != nil {
		return nil, usageError{err}
	}
	return out, nil
}

// newApproval builds the approval of one run; with --approve ask on a
// terminal it asks on stderr and reads the answer from stdin.
func newApproval(env *cliEnv, reg *tool.Registry, mode string) (*tool.Approval, error) {
	policy, err := tool.ApprovalPolicyFor(mode)
	if err != nil {
		return nil, err
	}
	a := &tool.Approval{Policy: policy, ReadOnly: reg.ReadOnly}
	if env.stdinIsTerminal {
		a.Ask = tool.LineAsker(env.stdin, env.stderr)
	}
	return a, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
