package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/cmd/agentloop/internal/tui"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// chatSetup is what runAgent has set up, handed to the chat: one Runner
// and the request every turn starts from.
type chatSetup struct {
	rn         *runner.Runner
	q          runner.Request
	approval   *tool.Approval
	rules      *tool.PermissionRules
	store      session.Store
	home, cwd  string
	offered    *tool.Registry
	mcpServers bool
	resolve    func(ctx context.Context, prov, model string) (llm.Model, llm.ModelInfo, error)
	prompt     string // the words after the flags: the first message
}

// newChatSetup gathers what the chat needs of a run's setup: the request
// runRequest made, its approval, the permission rules (again, for
// /approve to keep them first) and the built-in tools its policy offers.
func newChatSetup(env *cliEnv, f *runFlags, rn *runner.Runner, q runner.Request, cfg runner.Config, home, cwd string, mcp bool) (*chatSetup, error) {
	rules, err := permissionRules(env, home, cwd, f.trust)
	if err != nil {
		return nil, err
	}
	offered := q.Tools
	if q.ToolPolicy != nil {
		if offered, err = builtinPolicy(*q.ToolPolicy).Apply(q.Tools); err != nil {
			return nil, usageError{err}
		}
	}
	return &chatSetup{rn: rn, q: q, approval: q.Approval, rules: rules, store: cfg.Store, home: home, cwd: cwd,
		offered: offered, mcpServers: mcp, resolve: cfg.ResolveModel}, nil
}

// noTerminalChat is the refusal of a chat without a terminal.
const noTerminalChat = `agentloop chat needs a terminal; without one, use print mode: agentloop -p "prompt" (or agentloop run "prompt")`

func newChatCmd(env *cliEnv) *cobra.Command {
	cmd, f := runCommand(env)
	cmd.Use = "chat [flags] [first message...]"
	cmd.Short = "Talk with the agent in the terminal (what agentloop alone opens)"
	cmd.Long = `Open an interactive session in the terminal: type a message, watch the reply stream, answer
tool approvals inline, steer a run while it works. Finished blocks go into the terminal's
scrollback once and are never redrawn; only a few lines at the bottom change. --fullscreen uses
the alternate screen with its own scrolling instead.

Keys: Enter sends (steers a run in progress), Alt+Enter queues a follow-up, Esc aborts, Ctrl+C
clears the editor and twice quits, Ctrl+O prints the last tool output in full, Tab completes
/commands and @files, Ctrl+G opens $VISUAL or $EDITOR. /help lists the commands.

The flags are those of agentloop run; --approve defaults to ask here. Without a terminal the
chat refuses: use agentloop -p "prompt".`
	cmd.Example = `  agentloop chat
  agentloop chat -c                # continue the latest session of this directory
  agentloop chat -r 0193a2         # continue that session
  agentloop chat --model faux/demo --fullscreen`
	var fullscreen bool
	var connect string
	cmd.Flags().BoolVar(&fullscreen, "fullscreen", false, "use the alternate screen, with its own scrolling, instead of the scrollback")
	cmd.Flags().StringVar(&connect, "connect", "", "chat with a gateway (agentloop serve) at this URL instead of running the agent here; its token in $AGENTLOOP_TOKEN")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return openChat(c, env, f, fullscreen, connect, args)
	}
	return cmd
}

// openChat runs the chat on f's flags, refusing without a terminal.
func openChat(c *cobra.Command, env *cliEnv, f *runFlags, fullscreen bool, connect string, args []string) error {
	if !chatTerminal(env) {
		return usageError{errors.New(noTerminalChat)}
	}
	if !c.Flags().Changed("approve") {
		f.approve = tool.ApprovalModeAsk
	}
	if connect != "" {
		session := f.session
		if f.resume != "" && f.resume != resumeLatest {
			session = f.resume
		}
		if f.cont || f.resume == resumeLatest || f.fork != "" {
			return usageError{errors.New("--connect: give the gateway's session with -r ID (-c and --fork are for local sessions)")}
		}
		f.session = session
		return runConnectedChat(c.Context(), env, f, connect, fullscreen, strings.Join(args, " "))
	}
	f.chat = func(ctx context.Context, s *chatSetup) error { return runChat(ctx, env, f, s, fullscreen) }
	return runAgent(c.Context(), env, f, args)
}

// chatTerminal reports whether stdin and stdout are both a terminal.
func chatTerminal(env *cliEnv) bool {
	out, ok := env.stdout.(*os.File)
	return ok && env.stdinIsTerminal && fdIsTerminal(out)
}

// runChat is the chat's session: a bubbletea program over one Runner.
func runChat(ctx context.Context, env *cliEnv, f *runFlags, s *chatSetup, fullscreen bool) error {
	trace, closeTrace, err := chatTrace(env)
	if err != nil {
		return err
	}
	defer closeTrace()
	b := &chatBackend{ctx: ctx, env: env, f: f, s: s, q: s.q, approve: f.approve}
	b.q.OnEvent = nil // the events come from Run.Events
	approver := &tui.Approver{}
	s.approval.Ask = approver.Ask
	m := tui.New(tui.Options{Backend: b, Fullscreen: fullscreen, Cwd: s.cwd, Editor: chatEditor(env), Trace: trace})
	p := tea.NewProgram(m, chatProgramOptions(ctx, env, trace)...)
	b.sendMsg = p.Send
	approver.Send = p.Send
	if s.store != nil && s.q.Tools != nil && !f.noTools && !f.noAgents {
		if err := b.startAgents(ctx); err != nil {
			return err
		}
	}
	if s.prompt != "" {
		go p.Send(tui.SendMsg{Text: s.prompt})
	}
	_, err = p.Run()
	b.mu.Lock()
	b.closing = true // a background result now starts no run
	b.mu.Unlock()
	if b.agents != nil {
		b.agents.m.Close()
	}
	b.stop()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return exitError{code: exitInterrupted, msg: "interrupted"}
	}
	if err != nil && !errors.Is(err, tea.ErrInterrupted) {
		return err
	}
	if id := b.sessionID(); id != "" {
		fmt.Fprintf(env.stderr, "agentloop: session %s (agentloop chat -r %s to continue it)\n", id, id)
	}
	return nil
}

// chatEditor is the command Ctrl+G opens: $VISUAL, else $EDITOR.
func chatEditor(env *cliEnv) string {
	if e := env.getenv("VISUAL"); e != "" {
		return e
	}
	return env.getenv("EDITOR")
}

// chatTrace opens AGENTLOOP_CHAT_TRACE, when set: one line per key,
// event and terminal write, with its time (docs/chat.md).
func chatTrace(env *cliEnv) (io.Writer, func(), error) {
	p := env.getenv("AGENTLOOP_CHAT_TRACE")
	if p == "" {
		return nil, func() {}, nil
	}
	tf, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("AGENTLOOP_CHAT_TRACE: %w", err)
	}
	return &lockedWriter{w: tf}, func() { tf.Close() }, nil
}

// chatProgramOptions run the program on the terminal of env until ctx ends.
func chatProgramOptions(ctx context.Context, env *cliEnv, trace io.Writer) []tea.ProgramOption {
	var out io.Writer = env.stdout
	if f, ok := out.(*os.File); ok && trace != nil {
		out = tracedFile{File: f, trace: trace}
	}
	return []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(env.stdin), tea.WithOutput(out)}
}

// lockedWriter serialises the trace's lines from the program and the
// event pumps.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// tracedFile is the terminal with each write's size in the trace: one
// write is one frame of the renderer.
type tracedFile struct {
	*os.File
	trace io.Writer
}

func (t tracedFile) Write(p []byte) (int, error) {
	fmt.Fprintf(t.trace, "%d write %d\n", time.Now().UnixMicro(), len(p))
	return t.File.Write(p)
}

// WriteString is Write: the embedded file's own would bypass the trace.
func (t tracedFile) WriteString(s string) (int, error) { return t.Write([]byte(s)) }

// chatBackend is the chat's in-process Backend: turns are runs of one
// Runner on one session.
type chatBackend struct {
	ctx     context.Context
	env     *cliEnv
	f       *runFlags
	s       *chatSetup
	sendMsg func(tea.Msg)

	mu      sync.Mutex
	q       runner.Request // the next turn's request
	run     *runner.Run
	approve string
	pumps   sync.WaitGroup
	closing bool
	agents  *chatAgents // nil: --no-agents, --no-tools, --no-session
}

func (b *chatBackend) Send(text string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.run != nil {
		select {
		case <-b.run.Done():
		default:
			return errors.New("a run is still going")
		}
	}
	up, err := includeFiles(text, b.s.cwd)
	if err != nil {
		return err
	}
	q := b.q
	q.Prompt, q.Images = up.text, up.images
	run, err := b.s.rn.Start(b.ctx, q)
	if err != nil {
		return errors.New(describeError(err))
	}
	// The next turns continue this session (its copy, after a fork).
	if id := run.SessionID(); id != "" {
		b.q.Session = runner.SessionSpec{Cwd: b.q.Session.Cwd, ID: id, Opened: b.q.Session.Opened}
	}
	b.pump(run)
	return nil
}

// pump makes run the chat's current run and hands its events to the
// program; b.mu is held.
func (b *chatBackend) pump(run *runner.Run) {
	b.run = run
	b.pumps.Add(1)
	go func() {
		defer b.pumps.Done()
		for ev, err := range run.Events() {
			if err != nil {
				b.sendMsg(tui.RunErrorMsg{Err: errors.New(describeError(err))})
				return
			}
			if ev.Type == runner.EventRunEnd && ev.End != nil && ev.SessionID == "" {
				// Without a store, the next turn carries the history.
				b.mu.Lock()
				b.q.History = append(b.q.History, ev.End.Messages...)
				b.mu.Unlock()
			}
			b.sendMsg(tui.EventMsg{Event: ev})
		}
	}()
}

func (b *chatBackend) current() *runner.Run {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.run
}

func (b *chatBackend) Steer(text string) bool {
	r := b.current()
	return r != nil && r.Steer(text)
}

func (b *chatBackend) FollowUp(text string) bool {
	r := b.current()
	return r != nil && r.FollowUp(text)
}

func (b *chatBackend) Abort() {
	if r := b.current(); r != nil {
		r.Abort()
	}
}

// stop ends the run in progress and waits for it, at the chat's end.
func (b *chatBackend) stop() {
	if r := b.current(); r != nil {
		r.Abort()
		_, _ = r.Wait()
	}
	b.pumps.Wait()
}

func (b *chatBackend) sessionID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.q.Session.ID
}

func (b *chatBackend) State() tui.State {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := tui.State{Model: b.q.Info.Provider + "/" + b.q.Info.ID, Thinking: string(b.q.Options.Thinking),
		Approve: b.approve, Session: b.q.Session.ID}
	if st.Thinking == string(llm.ThinkingOff) {
		st.Thinking = ""
	}
	return st
}

// Command runs the slash commands that act on the session or the setup.
func (b *chatBackend) Command(ctx context.Context, name, args string) (string, error) {
	switch name {
	case "model":
		return b.model(ctx, args)
	case "thinking":
		l, ok := llm.ParseThinkingLevel(args)
		if !ok {
			return "", fmt.Errorf("%q: use one of off, minimal, low, medium, high, xhigh", args)
		}
		b.mu.Lock()
		b.q.Options.Thinking = l
		b.mu.Unlock()
		return "thinking: " + string(l), nil
	case "approve":
		p, err := tool.ApprovalPolicyFor(args)
		if err != nil || args == "" {
			return "", errors.New("use /approve ask, /approve auto or /approve never")
		}
		if b.s.rules != nil {
			p = b.s.rules.Policy(p)
		}
		b.mu.Lock()
		b.s.approval.Policy = p
		b.approve = args
		b.mu.Unlock()
		return "approval: " + args, nil
	case "tools":
		out := "tools: " + strings.Join(b.s.offered.Names(), ", ")
		if b.s.mcpServers {
			out += " (and the tools of the MCP servers: /mcp)"
		}
		return out, nil
	case "new":
		b.mu.Lock()
		b.q.Session = runner.SessionSpec{Cwd: b.q.Session.Cwd, Opened: b.q.Session.Opened}
		b.q.History = nil
		b.mu.Unlock()
		return "new session: the next message starts it", nil
	case "resume":
		return b.resume(ctx, args)
	case "fork":
		id := b.sessionID()
		if id == "" {
			return "", errors.New("no session to fork yet")
		}
		b.mu.Lock()
		b.q.Session = runner.SessionSpec{Cwd: b.q.Session.Cwd, Fork: id, Opened: b.q.Session.Opened}
		b.mu.Unlock()
		return "the next message continues in a copy of session " + id, nil
	case "session":
		id := b.sessionID()
		if id == "" {
			return "no session yet: the first message starts one", nil
		}
		path, _ := b.transcript(id)
		return fmt.Sprintf("session %s\nfile %s", id, path), nil
	case "export":
		return b.export(args)
	case "compact":
		id := b.sessionID()
		if id == "" {
			return "", errors.New("no session to compact yet")
		}
		b.mu.Lock()
		spec := b.q.Info.Provider + "/" + b.q.Info.ID
		b.mu.Unlock()
		a := []string{"compact", "--session", id, "--cwd", b.s.cwd, "--model", spec, "--session-dir", sessionsDir(b.f, b.s.home)}
		a = append(a, b.modelFlags()...)
		if args != "" {
			a = append(a, args)
		}
		return b.sub(ctx, a...)
	case "hooks":
		return b.sub(ctx, b.trusted("hooks", "list", "--cwd", b.s.cwd)...)
	case "mcp":
		return b.sub(ctx, b.trusted("mcp", "list", "--cwd", b.s.cwd)...)
	case "agents":
		return b.agentsCommand(args)
	}
	return "", fmt.Errorf("/%s is not available in the chat", name)
}

// modelFlags are the flags of agentloop compact that say where models and
// hooks come from, as the chat was started with.
func (b *chatBackend) modelFlags() []string {
	var a []string
	if b.f.script != "" {
		a = append(a, "--script", b.f.script)
	}
	if b.f.baseURL != "" {
		a = append(a, "--base-url", b.f.baseURL)
	}
	if b.f.modelsFile != "" {
		a = append(a, "--models", b.f.modelsFile)
	}
	if b.f.trust {
		a = append(a, "--trust")
	}
	if b.f.noHooks {
		a = append(a, "--no-hooks")
	}
	return a
}

// trusted adds --trust when the chat was started with it.
func (b *chatBackend) trusted(args ...string) []string {
	if b.f.trust {
		args = append(args, "--trust")
	}
	return args
}

// sub runs an agentloop subcommand in process and returns what it wrote.
func (b *chatBackend) sub(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	env := *b.env
	env.stdin, env.stdout, env.stderr = strings.NewReader(""), &out, &errOut
	env.stdinIsPipe, env.stdinIsTerminal = false, false
	code := execute(ctx, &env, args)
	text := strings.TrimSpace(out.String() + errOut.String())
	if code != exitOK {
		return "", errors.New(strings.ReplaceAll(text, "agentloop: ", ""))
	}
	return text, nil
}

func (b *chatBackend) model(ctx context.Context, spec string) (string, error) {
	if spec == "" {
		return "model: " + b.State().Model, nil
	}
	prov, id, ok := strings.Cut(spec, "/")
	if !ok || prov == "" || id == "" {
		return "", fmt.Errorf("%q: give the model as provider/id", spec)
	}
	m, info, err := b.s.resolve(ctx, prov, id)
	if err != nil {
		return "", errors.New(describeError(err))
	}
	b.mu.Lock()
	b.q.Model, b.q.Info = m, info
	b.mu.Unlock()
	return "model: " + spec + " (from the next message on)", nil
}

func (b *chatBackend) jsonl() (*session.JSONLStore, error) {
	js, ok := b.s.store.(*session.JSONLStore)
	if !ok {
		return nil, errors.New("this chat keeps no transcript (--no-session)")
	}
	return js, nil
}

func (b *chatBackend) transcript(id string) (string, error) {
	js, err := b.jsonl()
	if err != nil {
		return "", err
	}
	return js.Resolve(id)
}

func (b *chatBackend) resume(ctx context.Context, id string) (string, error) {
	js, err := b.jsonl()
	if err != nil {
		return "", err
	}
	if id == "" {
		infos, err := js.List(ctx, b.s.cwd)
		if err != nil {
			return "", err
		}
		if len(infos) == 0 {
			return "no earlier sessions in " + b.s.cwd, nil
		}
		var sb strings.Builder
		sb.WriteString("sessions of this directory, newest first (/resume ID):")
		for i := len(infos) - 1; i >= 0 && i >= len(infos)-10; i-- {
			in := infos[i]
			fmt.Fprintf(&sb, "\n  %s  %s  %d messages", in.ID, in.Updated.Format("2006-01-02 15:04"), in.Messages)
		}
		return sb.String(), nil
	}
	if _, err := js.Resolve(id); err != nil {
		return "", err
	}
	b.mu.Lock()
	b.q.Session = runner.SessionSpec{Cwd: b.q.Session.Cwd, ID: id, Opened: b.q.Session.Opened}
	b.q.History = nil
	b.mu.Unlock()
	return "the next message continues session " + id, nil
}

func (b *chatBackend) export(file string) (string, error) {
	id := b.sessionID()
	if id == "" {
		return "", errors.New("no session to export yet")
	}
	path, err := b.transcript(id)
	if err != nil {
		return "", err
	}
	if file == "" {
		file = filepath.Join(b.s.cwd, id+".jsonl")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %s (%d bytes)", file, len(data)), nil
}
