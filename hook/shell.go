package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/internal/proc"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// killGrace is how long a killed hook's pipes may stay open (held by a
// grandchild that escaped the group) before Wait gives up on them.
const killGrace = 2 * time.Second

// maxOutput caps what is kept of a hook's stdout and of its stderr.
const maxOutput = 1 << 20

// Scope says whose settings file a command hook came from.
type Scope string

// The scopes.
const (
	ScopeUser    Scope = "user"    // $AGENTLOOP_HOME/settings.json: always trusted
	ScopeProject Scope = "project" // <workspace>/.agentloop/settings.json: runs in a trusted workspace only
)

// ShellHook is one command hook from a settings file.
type ShellHook struct {
	Event   string // Claude Code's event name: PreToolUse, Stop, ...
	Matcher string
	Command string
	Timeout time.Duration
	Source  string // the settings file
	Scope   Scope
	// Active is false when the hook will not run; Inactive says why.
	Active   bool
	Inactive string

	re *regexp.Regexp // nil matches everything
}

// matches reports whether the hook applies to a call named by names. An
// event with nothing to match (UserPromptSubmit, Stop) passes no names and
// runs every hook, its matcher ignored, as in Claude Code.
func (h *ShellHook) matches(names ...string) bool {
	if h.re == nil || len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n != "" && h.re.MatchString(n) {
			return true
		}
	}
	return false
}

// compileMatcher anchors a matcher, so that "Write" matches Write but not
// TodoWrite, while "Edit|Write" and "mcp__.*" work as regexps. Empty and
// "*" match everything.
func compileMatcher(m string) (*regexp.Regexp, error) {
	if m == "" || m == "*" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + m + ")$")
}

// shellEnv is what every command of one workspace runs with.
type shellEnv struct {
	workspace      string
	sessionID      string
	transcriptPath string
	shell          string
	env            []string
}

func newShellEnv(workspace, sessionID, transcriptPath string) *shellEnv {
	sh := "/bin/sh"
	if p, err := exec.LookPath("bash"); err == nil {
		sh = p
	}
	env := append(os.Environ(), "AGENTLOOP_PROJECT_DIR="+workspace, "CLAUDE_PROJECT_DIR="+workspace)
	return &shellEnv{workspace: workspace, sessionID: sessionID, transcriptPath: transcriptPath, shell: sh, env: env}
}

type cmdResult struct {
	code           int
	stdout, stderr string
	timedOut       bool
	err            error // it could not start
}

// run runs one command with stdin, in its own process group, in the
// workspace. At its timeout, or when ctx ends, the whole group is killed;
// whatever of the group outlives the command is killed when it exits.
func (e *shellEnv) run(ctx context.Context, h *ShellHook, stdin []byte) cmdResult {
	tctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	var stdout, stderr capped
	// The hook runs in its own process group, tagged, so that everything it
	// started (setsid escapees included, which the subreaper of package
	// proc adopts) is found, killed and reaped: at the timeout, on abort,
	// and when the hook exits leaving children behind.
	_ = proc.EnableSubreaper() // without it the sweep still finds the group and tagged descendants
	c := proc.CommandContext(tctx, e.shell, "-c", h.Command)
	cmd := c.Cmd
	cmd.Dir = e.workspace
	cmd.Env = e.env
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = killGrace
	err := c.Start()
	if err == nil {
		err = cmd.Wait()
		c.Sweep(false, killGrace)
	}
	r := cmdResult{stdout: stdout.String(), stderr: stderr.String(), code: -1}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	switch {
	case err != nil && tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		r.timedOut = true
	case err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay):
		r.err = err
	}
	return r
}

// capped keeps the first maxOutput bytes written to it and drops the rest,
// so a chatty hook cannot fill memory or block on a full pipe.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := maxOutput - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// shellGroup is the command hooks of one event, registered on the bus as
// one hook: like Claude Code, it runs the matching commands in parallel
// and merges what they say.
type shellGroup struct {
	bus   *Bus
	env   *shellEnv
	event string
	point Point
	name  string
	hooks []*ShellHook // active ones, in settings order
}

// matching returns the hooks matching any of names, without repeating a
// command.
func (g *shellGroup) matching(names ...string) []*ShellHook {
	var out []*ShellHook
	seen := make(map[string]bool, len(g.hooks))
	for _, h := range g.hooks {
		if seen[h.Command] || !h.matches(names...) {
			continue
		}
		seen[h.Command] = true
		out = append(out, h)
	}
	return out
}

// runAll runs hooks in parallel with input on stdin, reports what the user
// should hear, and returns what each said, in settings order.
func (g *shellGroup) runAll(ctx context.Context, hooks []*ShellHook, input ccInput) []verdict {
	input.SessionID, input.TranscriptPath, input.Cwd = g.env.sessionID, g.env.transcriptPath, g.env.workspace
	input.HookEventName = g.event
	stdin, err := json.Marshal(input)
	if err != nil {
		g.bus.report(ctx, Notice{Point: g.point, Hook: g.name, Kind: NoticeError, Err: err,
			Text: fmt.Sprintf("%s hooks skipped: cannot encode their input: %v", g.event, err)})
		return nil
	}
	stdin = append(stdin, '\n')
	results := make([]cmdResult, len(hooks))
	if len(hooks) == 1 {
		results[0] = g.env.run(ctx, hooks[0], stdin)
	} else {
		var wg sync.WaitGroup
		for i, h := range hooks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = g.env.run(ctx, h, stdin)
			}()
		}
		wg.Wait()
	}
	verdicts := make([]verdict, len(hooks))
	for i, h := range hooks {
		r := results[i]
		n := Notice{Point: g.point, Hook: g.name, Source: h.Source}
		switch {
		case ctx.Err() != nil:
			verdicts[i] = verdict{failed: true}
			continue
		case r.timedOut:
			n.Kind, n.Err = NoticeTimeout, fmt.Errorf("%w after %v", ErrTimeout, h.Timeout)
			n.Text = fmt.Sprintf("%s hook `%s` (%s) ran past its %v timeout and was killed; the run goes on without it.",
				g.event, h.Command, h.Source, h.Timeout)
			g.bus.report(ctx, n)
			verdicts[i] = verdict{failed: true}
			continue
		case r.err != nil:
			n.Kind, n.Err = NoticeError, r.err
			n.Text = fmt.Sprintf("%s hook `%s` (%s) could not run: %v; ignored.", g.event, h.Command, h.Source, r.err)
			g.bus.report(ctx, n)
			verdicts[i] = verdict{failed: true}
			continue
		}
		v := interpret(g.event, r.code, r.stdout, r.stderr)
		if v.failed {
			n.Kind, n.Err = NoticeError, fmt.Errorf("exit status %d", r.code)
			n.Text = fmt.Sprintf("%s hook `%s` (%s) failed with exit status %d; ignored.", g.event, h.Command, h.Source, r.code)
			if s := strings.TrimSpace(r.stderr); s != "" {
				n.Text += " stderr: " + s
			}
			g.bus.report(ctx, n)
		}
		if v.user != "" {
			g.bus.report(ctx, Notice{Point: g.point, Hook: g.name, Source: h.Source, Kind: NoticeMessage, Text: v.user})
		}
		verdicts[i] = v
	}
	return verdicts
}

func (g *shellGroup) preToolUse(ctx context.Context, in BeforeToolCallInput) (BeforeToolCallOutput, error) {
	ccName, ccArgs := twin(in.Call, g.env.workspace)
	hooks := g.matching(ccName, in.Call.Name)
	if len(hooks) == 0 {
		return BeforeToolCallOutput{}, nil
	}
	vs := g.runAll(ctx, hooks, ccInput{
		ToolName: ccName, ToolInput: ccArgs, ToolUseID: in.Call.ID,
		AgentloopToolName: in.Call.Name, AgentloopToolInput: in.Call.Args,
	})
	var out BeforeToolCallOutput
	var reasons []string
	var updated json.RawMessage
	for i, v := range vs {
		if v.halt != "" && out.Halt == "" {
			out.Halt = v.halt
		}
		switch {
		case v.block:
			out.Block = true
			r := v.feedback
			if r == "" {
				r = fmt.Sprintf("The %s call was blocked by the PreToolUse hook `%s`.", ccName, hooks[i].Command)
			}
			reasons = append(reasons, r)
		case v.permission == PermissionAsk && out.Permission != PermissionAsk:
			out.Permission, out.Reason = PermissionAsk, v.permReason
		case v.permission == PermissionAllow && out.Permission == PermissionNone:
			out.Permission = PermissionAllow
		}
		if len(v.updated) > 0 {
			updated = v.updated
		}
	}
	if out.Halt != "" && !out.Block {
		out.Block = true
		reasons = append(reasons, out.Halt)
	}
	if out.Block {
		out.Permission = PermissionDeny
		out.Reason = strings.Join(reasons, "\n")
		return out, nil
	}
	if updated != nil {
		out.Args = untwin(in.Call, updated, g.env.workspace)
	}
	return out, nil
}

// PostToolUseFeedbackPrefix starts the text block through which a
// PostToolUse (or PostToolUseFailure) hook's feedback reaches the model,
// appended to the result.
const PostToolUseFeedbackPrefix = "PostToolUse hook feedback:\n"

// postToolUse runs PostToolUse hooks after a call that ran and succeeded,
// PostToolUseFailure hooks after one that ran and failed; a call that never
// ran (refused by a hook, the approval or loop detection; an unknown tool)
// runs neither. A caller that fires the point itself without saying
// (tool.Executed unknown) is taken to have run the call.
func (g *shellGroup) postToolUse(ctx context.Context, in ToolResultPersistInput) (ToolResultPersistOutput, error) {
	if ran, known := tool.Executed(ctx); known && !ran {
		return ToolResultPersistOutput{}, nil
	}
	failure := g.event == EventPostToolUseFailure
	if in.Result.IsError != failure {
		return ToolResultPersistOutput{}, nil
	}
	ccName, ccArgs := twin(in.Call, g.env.workspace)
	hooks := g.matching(ccName, in.Call.Name)
	if len(hooks) == 0 {
		return ToolResultPersistOutput{}, nil
	}
	input := ccInput{ToolName: ccName, ToolInput: ccArgs, ToolUseID: in.Call.ID,
		AgentloopToolName: in.Call.Name, AgentloopToolInput: in.Call.Args}
	if failure {
		input.Error = in.Result.Text()
	} else {
		input.ToolResponse = toolResponse(ccName, in.Result)
	}
	vs := g.runAll(ctx, hooks, input)
	var out ToolResultPersistOutput
	var notes []string
	for _, v := range vs {
		if v.halt != "" && out.Halt == "" {
			out.Halt = v.halt
		}
		for _, s := range []string{v.feedback, v.context} {
			if s != "" {
				notes = append(notes, s)
			}
		}
	}
	if len(notes) > 0 {
		res := in.Result
		res.Content = append(append([]llm.Content(nil), res.Content...),
			llm.Text(PostToolUseFeedbackPrefix+strings.Join(notes, "\n")))
		out.Result = &res
	}
	return out, nil
}

func (g *shellGroup) userPromptSubmit(ctx context.Context, in UserPromptSubmitInput) (UserPromptSubmitOutput, error) {
	hooks := g.matching()
	if len(hooks) == 0 {
		return UserPromptSubmitOutput{}, nil
	}
	prompt := in.Prompt
	vs := g.runAll(ctx, hooks, ccInput{Prompt: &prompt})
	var out UserPromptSubmitOutput
	var reasons []string
	for i, v := range vs {
		if v.halt != "" && out.Halt == "" {
			out.Halt = v.halt
		}
		if v.block {
			out.Block = true
			r := v.user
			if r == "" {
				r = fmt.Sprintf("The prompt was refused by the UserPromptSubmit hook `%s`.", hooks[i].Command)
			}
			reasons = append(reasons, r)
		}
		out.Context = joinContext(out.Context, v.context)
	}
	out.Reason = strings.Join(reasons, "\n")
	return out, nil
}

func (g *shellGroup) stop(ctx context.Context, in StopInput) (StopOutput, error) {
	hooks := g.matching()
	if len(hooks) == 0 {
		return StopOutput{}, nil
	}
	active := in.Active
	last := in.Last.Text()
	vs := g.runAll(ctx, hooks, ccInput{StopHookActive: &active, LastAssistantMessage: &last})
	var out StopOutput
	var reasons []string
	for _, v := range vs {
		if v.halt != "" {
			return StopOutput{Halt: v.halt}, nil
		}
		if v.block {
			out.Continue = true
			if v.feedback != "" {
				reasons = append(reasons, v.feedback)
			}
		}
	}
	out.Reason = strings.Join(reasons, "\n")
	return out, nil
}

func (g *shellGroup) sessionStart(ctx context.Context, in SessionStartInput) (SessionStartOutput, error) {
	hooks := g.matching(in.Source)
	if len(hooks) == 0 {
		return SessionStartOutput{}, nil
	}
	vs := g.runAll(ctx, hooks, ccInput{Source: in.Source})
	var out SessionStartOutput
	for _, v := range vs {
		if v.halt != "" && out.Halt == "" {
			out.Halt = v.halt
		}
		out.Context = joinContext(out.Context, v.context)
	}
	return out, nil
}

// observe runs the hooks of a point that cannot change anything; a halt
// is only reported.
func (g *shellGroup) observe(ctx context.Context, input ccInput, names ...string) {
	hooks := g.matching(names...)
	if len(hooks) == 0 {
		return
	}
	for _, v := range g.runAll(ctx, hooks, input) {
		if v.halt != "" {
			g.bus.report(ctx, Notice{Point: g.point, Hook: g.name, Kind: NoticeMessage, Text: v.halt})
		}
	}
}

func (g *shellGroup) sessionEnd(ctx context.Context, ev SessionEndEvent) error {
	g.observe(ctx, ccInput{Reason: ev.Reason}, ev.Reason)
	return nil
}

func (g *shellGroup) subagentStart(ctx context.Context, ev SubagentEvent) error {
	g.observe(ctx, ccInput{AgentID: ev.AgentID, AgentType: ev.AgentType}, ev.AgentType)
	return nil
}

func (g *shellGroup) subagentStop(ctx context.Context, ev SubagentEvent) error {
	active := false
	last := ev.LastAssistantMessage
	g.observe(ctx, ccInput{AgentID: ev.AgentID, AgentType: ev.AgentType, AgentTranscriptPath: ev.TranscriptPath,
		StopHookActive: &active, LastAssistantMessage: &last}, ev.AgentType)
	return nil
}

func (g *shellGroup) compaction(ctx context.Context, ev CompactionEvent) error {
	in := ccInput{Trigger: ev.Trigger}
	if g.event == EventPreCompact {
		instr := ev.Instructions
		in.CustomInstructions = &instr
	} else {
		summary := ev.Summary
		in.CompactSummary = &summary
	}
	g.observe(ctx, in, ev.Trigger)
	return nil
}

// register puts the group on the bus at its point.
func (g *shellGroup) register(sources []string) {
	var longest time.Duration
	for _, h := range g.hooks {
		longest = max(longest, h.Timeout)
	}
	spec := Spec{
		Name: g.name,
		// The commands time out on their own; the bus's bound is only a
		// backstop, with room for a loaded machine to reap them.
		Timeout:  longest + killGrace + 10*time.Second,
		Source:   strings.Join(sources, ", "),
		FailOpen: true, // like Claude Code: a hook that fails does not block
	}
	b := g.bus
	switch g.point {
	case BeforeToolCall:
		b.OnBeforeToolCall(spec, g.preToolUse)
	case ToolResultPersist:
		b.OnToolResultPersist(spec, g.postToolUse)
	case UserPromptSubmit:
		b.OnUserPromptSubmit(spec, g.userPromptSubmit)
	case Stop:
		b.OnStop(spec, g.stop)
	case SessionStart:
		b.OnSessionStart(spec, g.sessionStart)
	case SessionEnd:
		b.OnSessionEnd(spec, g.sessionEnd)
	case BeforeCompaction:
		b.OnBeforeCompaction(spec, g.compaction)
	case AfterCompaction:
		b.OnAfterCompaction(spec, g.compaction)
	case SubagentStart:
		b.OnSubagentStart(spec, g.subagentStart)
	case SubagentStop:
		b.OnSubagentStop(spec, g.subagentStop)
	}
}
