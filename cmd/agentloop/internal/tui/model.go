package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/command"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/reply"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/tool"
)

// Options configure a chat.
type Options struct {
	Backend Backend
	// Fullscreen puts the chat on the alternate screen with its own
	// scrolling; the default is inline, into the terminal's scrollback.
	Fullscreen bool
	// Cwd is where @ completes file names.
	Cwd string
	// Editor is the command Ctrl+G opens ($VISUAL, $EDITOR); "" is vi.
	Editor string
	// Now is the clock of elapsed times; nil is time.Now.
	Now func() time.Time
	// Trace, when set, gets one line per key and event with the time it
	// was seen (AGENTLOOP_CHAT_TRACE), to measure latencies from outside.
	Trace io.Writer
	// Width and Height are the terminal's size before the first
	// WindowSizeMsg (tests); 0 is 80×24.
	Width, Height int
}

// Lines of a finished tool's output shown in its block; Ctrl+O prints all.
const toolOutputLines = 8

// ctrlCWindow is how soon a second Ctrl+C must follow the first to quit.
const ctrlCWindow = time.Second

// Model is the chat's state. It is a value type, as bubbletea wants; the
// pointer fields are shared between copies on purpose (one editor, one
// outbox).
type Model struct {
	opt   Options
	now   func() time.Time
	state State

	width, height int
	editor        textarea.Model
	view          viewport.Model // fullscreen: the committed blocks
	viewText      *strings.Builder

	running   bool
	runStart  time.Time
	sent      string         // the prompt of the run in progress
	tail      string         // the streaming, uncommitted part of a text block
	chunks    *reply.Chunker // cuts the streaming block where it may be committed
	md        *markdown
	blockText []byte // the streaming block's text so far
	blockAt   int    // how far into it the committed pieces reach
	thinking  string // the thinking block streaming now
	tools     []runningTool
	approval  *ApprovalMsg
	queued    []queuedMsg
	afterRun  []string // typed while the run took no more messages
	usage     llm.Usage
	lastTool  string // the whole output of the last finished tool
	lastReply string
	frame     int

	// committed is every block committed so far, in order (what the
	// scrollback shows); outbox the ones not yet handed to tea.Println.
	committed []string
	outbox    []string
	printing  bool
	tallest   int // the frame's most lines in the last 250 ms
	tallestAt time.Time
	floor     int // the frame's least height while prints are under way
	resizedAt time.Time
	printedAt time.Time

	lastCtrlC time.Time
	hint      string // a one-line hint under the editor ("Ctrl+C again quits")
	cmdBusy   string // a slash command running in the background
	quitting  bool
}

type runningTool struct {
	id, name, args string
	started        time.Time
	last           string // the last line of its progress
}

type queuedMsg struct {
	text   string
	follow bool
}

type tickMsg struct{}
type printedMsg struct{}
type commandDoneMsg struct {
	name, out string
	err       error
}
type editorDoneMsg struct {
	path string
	err  error
}

// New returns the chat's model.
func New(opt Options) Model {
	m := Model{opt: opt, now: opt.Now, width: opt.Width, height: opt.Height, md: &markdown{}}
	if m.now == nil {
		m.now = time.Now
	}
	if m.width == 0 {
		m.width = 80
	}
	if m.height == 0 {
		m.height = 24
	}
	ed := textarea.New()
	ed.Placeholder = "Message, /command, @file"
	ed.ShowLineNumbers = false
	ed.Prompt = "› "
	ed.DynamicHeight = true
	ed.MinHeight = 1
	ed.MaxHeight = 8
	ed.KeyMap.InsertNewline.SetKeys("shift+enter", "ctrl+j")
	ed.SetWidth(m.width)
	ed.Focus()
	m.editor = ed
	if opt.Backend != nil {
		m.state = opt.Backend.State()
	}
	if opt.Fullscreen {
		m.view = viewport.New(viewport.WithWidth(m.width), viewport.WithHeight(max(1, m.height-4)))
		m.viewText = &strings.Builder{}
	}
	return m
}

// Committed returns every block committed so far, in order.
func (m Model) Committed() []string { return m.committed }

// Init starts the ticker of elapsed times.
func (m Model) Init() tea.Cmd { return tick() }

func tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update is the reducer.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.resizedAt = time.Now()
		m.editor.SetWidth(m.width)
		if m.opt.Fullscreen {
			m.view.SetWidth(m.width)
			m.view.SetHeight(max(1, m.height-m.liveHeight()))
		}
	case tickMsg:
		m.frame++
		cmds = append(cmds, tick())
	case printedMsg:
		m.printing = false // and flush below sends the next piece
		m.printedAt = time.Now()
	case EventMsg:
		m.trace("event", string(msg.Event.Type))
		cmds = append(cmds, m.event(msg.Event))
	case SendMsg:
		if !m.running && strings.TrimSpace(msg.Text) != "" {
			cmds = append(cmds, m.send(strings.TrimSpace(msg.Text)))
		}
	case RunErrorMsg:
		m.running = false
		m.commit(paint(styleError, "✗ "+msg.Err.Error()))
	case ApprovalMsg:
		m.trace("approval", msg.Call.Name)
		a := msg
		m.approval = &a
	case approvalGoneMsg:
		if m.approval != nil && m.approval.ID == msg.id {
			m.approval = nil
		}
	case commandDoneMsg:
		m.cmdBusy = ""
		if m.opt.Backend != nil {
			m.state = m.opt.Backend.State()
		}
		if msg.err != nil {
			m.commit(paint(styleError, "✗ /"+msg.name+": "+msg.err.Error()))
		} else if msg.out != "" {
			m.commit(paint(styleNotice, msg.out))
		}
	case editorDoneMsg:
		if msg.err != nil {
			m.commit(paint(styleError, "✗ editor: "+msg.err.Error()))
		} else if b, err := os.ReadFile(msg.path); err == nil {
			m.editor.SetValue(strings.TrimRight(string(b), "\n"))
		}
		os.Remove(msg.path)
	case tea.KeyPressMsg:
		m.trace("key", msg.String())
		cmd, handled := m.key(msg)
		cmds = append(cmds, cmd)
		if !handled {
			var c tea.Cmd
			m.editor, c = m.editor.Update(msg)
			cmds = append(cmds, c)
		}
	case tea.PasteMsg:
		var c tea.Cmd
		m.editor, c = m.editor.Update(msg)
		cmds = append(cmds, c)
	case tea.MouseWheelMsg:
		if m.opt.Fullscreen {
			var c tea.Cmd
			m.view, c = m.view.Update(msg)
			cmds = append(cmds, c)
		}
	}
	// The frame's height as drawn (with its padding), and the tallest
	// of the last 250 ms: the frame on the screen may be an older one.
	now := time.Now()
	h := m.liveHeight()
	if m.printing || len(m.outbox) > 0 || now.Sub(m.printedAt) < 100*time.Millisecond {
		m.floor = max(m.floor, h)
	} else {
		m.floor = h
	}
	if f := max(h, m.floor); f >= m.tallest || now.Sub(m.tallestAt) > 250*time.Millisecond {
		m.tallest, m.tallestAt = f, now
	}
	cmds = append(cmds, m.flush())
	// Quit once everything committed is printed: what the scrollback
	// shows is the whole session.
	if m.quitting && !m.printing && len(m.outbox) == 0 {
		cmds = append(cmds, tea.Quit)
	}
	return m, tea.Batch(cmds...)
}

func (m *Model) trace(kind, what string) {
	if m.opt.Trace != nil {
		fmt.Fprintf(m.opt.Trace, "%d %s %s\n", time.Now().UnixMicro(), kind, what)
	}
}

// commit adds a finished block: printed once, never redrawn.
func (m *Model) commit(block string) {
	m.committed = append(m.committed, block)
	if m.opt.Fullscreen {
		if m.viewText.Len() > 0 {
			m.viewText.WriteByte('\n')
		}
		m.viewText.WriteString(block)
		atBottom := m.view.AtBottom()
		m.view.SetContent(m.viewText.String())
		if atBottom {
			m.view.GotoBottom()
		}
		return
	}
	m.outbox = append(m.outbox, block)
}

// flush hands the outbox to tea.Println, one print in flight at a time:
// bubbletea runs commands concurrently, so two prints in flight could land
// in either order. A print is at most a screen's worth of lines less the
// live region: the inline renderer makes room by scrolling, and lines of
// its frame scrolled past the top of the screen stay in the scrollback.
// The frame on the screen may be an older, taller one than the view now
// (frames are drawn 60 times a second, prints at once), so the budget
// counts the tallest frame of the last 250 ms.
func (m *Model) flush() tea.Cmd {
	if m.printing || len(m.outbox) == 0 {
		return nil
	}
	// After a resize the renderer redraws its frame where the terminal
	// put it; a print before that lands in the wrong place. The next
	// tick prints.
	if time.Since(m.resizedAt) < 250*time.Millisecond {
		return nil
	}
	budget := max(1, m.height-m.tallest-1)
	var lines []string
	for len(m.outbox) > 0 && len(lines) < budget {
		bl := strings.Split(m.outbox[0], "\n")
		take := min(len(bl), budget-len(lines))
		lines = append(lines, bl[:take]...)
		if take == len(bl) {
			m.outbox = m.outbox[1:]
		} else {
			m.outbox[0] = strings.Join(bl[take:], "\n")
		}
	}
	if len(m.outbox) == 0 {
		m.outbox = nil
	}
	m.printing = true
	return tea.Sequence(tea.Println(strings.Join(lines, "\n")), func() tea.Msg { return printedMsg{} })
}

// event folds one event of a run into the state.
func (m *Model) event(ev runner.Event) tea.Cmd {
	a := ev.Agent
	switch ev.Type {
	case runner.EventRunStart:
		m.running = true
		m.runStart = m.now()
		if ev.Start != nil && ev.Start.Model != "" {
			m.state.Model = ev.Start.Model
		}
		if ev.SessionID != "" {
			m.state.Session = ev.SessionID
		}
	case agent.EventMessageStart:
		if a == nil || a.Message == nil || a.Message.Role != llm.RoleUser {
			break
		}
		text := messageText(*a.Message)
		for i, q := range m.queued {
			if q.text == text {
				m.queued = append(m.queued[:i], m.queued[i+1:]...)
				m.commit(userBlock(text))
				return nil
			}
		}
		// The run's prompt was shown when it was sent (as typed: the
		// message may hold the @files it included); any other user message
		// (a hook's, a stop continuation's, another client's) is shown now.
		if m.sent == "" {
			m.commit(userBlock(text))
		}
		m.sent = ""
	case agent.EventMessageUpdate:
		if a == nil || a.LLM == nil {
			break
		}
		switch a.LLM.Type {
		case llm.EventTextDelta:
			if m.chunks == nil {
				m.chunks = reply.NewChunker(reply.ChunkerOptions{MinChars: 1, MaxChars: chunkMax, FlushOnParagraph: true})
			}
			m.chunks.Write(a.LLM.Delta)
			m.blockText = append(m.blockText, a.LLM.Delta...)
			m.chunks.DrainFunc(false, m.commitText)
			m.tail = m.chunks.Buffered()
		case llm.EventTextEnd:
			m.endText()
		case llm.EventThinkingDelta:
			m.thinking += a.LLM.Delta
		case llm.EventThinkingEnd:
			if t := strings.TrimSpace(m.thinking); t != "" {
				m.commit(paint(styleDim, "✻ "+firstLine(t, m.width-4)+moreLines(t)))
			}
			m.thinking = ""
		}
	case agent.EventMessageEnd:
		if a == nil || a.Message == nil || a.Message.Role != llm.RoleAssistant {
			break
		}
		m.endText()
		m.thinking = ""
		if u := a.Message.Usage; u != nil {
			m.usage.Add(*u)
		}
		if a.Message.StopReason == llm.StopReasonError && a.Message.ErrorMessage != "" {
			m.commit(paint(styleError, "✗ "+a.Message.ErrorMessage))
		}
	case agent.EventToolExecutionStart:
		if a == nil {
			break
		}
		m.tools = append(m.tools, runningTool{id: a.ToolCallID, name: a.ToolName, args: argsSummary(a.ToolName, a.Args), started: m.now()})
	case agent.EventToolExecutionUpdate:
		if a == nil || a.Partial == nil {
			break
		}
		for i := range m.tools {
			if m.tools[i].id == a.ToolCallID {
				m.tools[i].last = lastLine(contentText(a.Partial.Content))
			}
		}
	case agent.EventToolExecutionEnd:
		if a == nil {
			break
		}
		var t runningTool
		for i := range m.tools {
			if m.tools[i].id == a.ToolCallID {
				t = m.tools[i]
				m.tools = append(m.tools[:i], m.tools[i+1:]...)
				break
			}
		}
		if t.name == "" {
			t = runningTool{name: a.ToolName}
		}
		var res tool.Result
		if a.Result != nil {
			res = *a.Result
		}
		out := contentText(res.Content)
		m.lastTool = out
		m.commit(toolBlock(t.name, t.args, out, res.IsError, m.width))
	case runner.EventRunEnd:
		m.endText()
		m.running = false
		m.tools = nil
		m.approval = nil
		m.thinking = ""
		if r := ev.End; r != nil {
			if r.SessionID != "" {
				m.state.Session = r.SessionID
			}
			if r.Model != "" {
				m.state.Model = r.Model
			}
			if t := lastAssistantText(r.Messages); t != "" {
				m.lastReply = t
			}
			switch {
			case r.OK():
			case r.Reason == runner.ReasonAborted:
				m.commit(paint(styleError, "✗ aborted"))
			default:
				msg := r.Message
				if msg == "" && r.Err != nil {
					msg = r.Err.Error()
				}
				if msg == "" {
					msg = "the run failed (" + r.Reason + ")"
				}
				m.commit(paint(styleError, "✗ "+msg))
			}
		}
		// What was queued and not delivered goes as the next run.
		var next []string
		for _, q := range m.queued {
			next = append(next, q.text)
		}
		next = append(next, m.afterRun...)
		m.queued, m.afterRun = nil, nil
		if len(next) > 0 {
			return m.send(strings.Join(next, "\n\n"))
		}
	case runner.EventSubagentStart, runner.EventSubagentEnd:
		if sa := ev.Subagent; sa != nil {
			m.commit(paint(styleNotice, subagentLine(ev.Type, sa)))
		}
	default:
		if ev.Notice != nil && ev.Notice.Message != "" && noticeShown(ev.Type) {
			m.commit(paint(styleNotice, "· "+ev.Notice.Message))
		}
		if ev.Compaction != nil && ev.Compaction.Message != "" {
			m.commit(paint(styleNotice, "· "+ev.Compaction.Message))
		}
	}
	return nil
}

// subagentLine is the committed line of a child's start or end.
func subagentLine(typ agent.EventType, sa *runner.Subagent) string {
	mode := ""
	if sa.Background {
		mode = ", background"
	}
	if typ == runner.EventSubagentStart {
		return fmt.Sprintf("⎿ agent %s (%s%s) %q started", sa.TaskID, sa.Agent, mode, sa.Description)
	}
	return fmt.Sprintf("⎿ agent %s (%s%s) %q: %s in %s, %d turns", sa.TaskID, sa.Agent, mode, sa.Description,
		sa.Status, sa.Duration.Round(time.Millisecond), sa.Turns)
}

// noticeShown says which runner notices are worth a line: the user should
// hear about retries, fallbacks, warnings; lanes and attempts are noise.
func noticeShown(t agent.EventType) bool {
	switch t {
	case runner.EventAttemptStart, runner.EventLaneAcquired, runner.EventToolsReady, runner.EventRunStart:
		return false
	}
	return true
}

// chunkMax is the most text of a streaming block held back from the
// scrollback: the chunker commits every paragraph, and a longer one at a
// line end (never inside a code fence without closing it) by this size.
const chunkMax = 2000

// tailLines is how many lines of streaming text the live region holds.
func (m *Model) tailLines() int { return max(3, (m.height-2)/2) }

// commitText commits a finished piece of assistant text, as markdown.
func (m *Model) commitText(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	block := m.md.render(strings.TrimRight(text, "\n"), m.width)
	// The chunker drops the blank line it cut at: find the piece in the
	// block's text to put it back.
	first, _, _ := strings.Cut(text, "\n")
	if i := bytes.Index(m.blockText[m.blockAt:], []byte(first)); i >= 0 && first != "" {
		at := m.blockAt + i
		if m.blockAt > 0 && bytes.HasSuffix(bytes.TrimRight(m.blockText[:at], " \t"), []byte("\n\n")) {
			block = "\n" + block
		}
		m.blockAt = at + len(first)
	}
	m.commit(block)
}

func (m *Model) endText() {
	if m.chunks != nil {
		m.chunks.DrainFunc(true, m.commitText)
		m.chunks = nil
	}
	m.blockText, m.blockAt = nil, 0
	m.tail = ""
}

// send starts a run on text, or runs it as a slash command.
func (m *Model) send(text string) tea.Cmd {
	m.commit(userBlock(text))
	m.sent = text
	m.running = true
	m.runStart = m.now()
	if err := m.opt.Backend.Send(text); err != nil {
		m.running = false
		m.commit(paint(styleError, "✗ "+err.Error()))
	}
	return nil
}

// key handles the keys the chat owns; the rest edit the text.
func (m *Model) key(k tea.KeyPressMsg) (tea.Cmd, bool) {
	s := k.String()
	if s != "ctrl+c" {
		m.hint = ""
	}
	if m.approval != nil {
		if cmd, ok := m.approvalKey(s); ok {
			return cmd, true
		}
	}
	switch s {
	case "ctrl+c":
		now := m.now()
		if m.editor.Value() != "" {
			m.editor.Reset()
			m.lastCtrlC = now
			return nil, true
		}
		if !m.lastCtrlC.IsZero() && now.Sub(m.lastCtrlC) <= ctrlCWindow {
			if m.running {
				m.opt.Backend.Abort()
			}
			m.quitting = true
			return nil, true
		}
		m.lastCtrlC = now
		m.hint = "Ctrl+C again to quit"
		return nil, true
	case "esc":
		if m.running {
			m.trace("abort", "esc")
			m.opt.Backend.Abort()
			// Queued messages go back to the editor, to edit or send again.
			var back []string
			for _, q := range m.queued {
				back = append(back, q.text)
			}
			back = append(back, m.afterRun...)
			if cur := m.editor.Value(); cur != "" {
				back = append(back, cur)
			}
			m.queued, m.afterRun = nil, nil
			m.editor.SetValue(strings.Join(back, "\n"))
		}
		return nil, true
	case "enter", "alt+enter":
		text := strings.TrimSpace(m.editor.Value())
		if text == "" {
			return nil, true
		}
		if name, args, ok, err := command.Parse(text); ok {
			m.editor.Reset()
			if err != nil {
				m.commit(paint(styleError, "✗ "+err.Error()))
				return nil, true
			}
			return m.slash(name, args), true
		}
		m.editor.Reset()
		if !m.running {
			return m.send(text), true
		}
		follow := s == "alt+enter"
		ok := false
		if follow {
			ok = m.opt.Backend.FollowUp(text)
		} else {
			ok = m.opt.Backend.Steer(text)
		}
		if ok {
			m.queued = append(m.queued, queuedMsg{text: text, follow: follow})
		} else {
			m.afterRun = append(m.afterRun, text)
		}
		return nil, true
	case "tab":
		if c := m.completions(); len(c) > 0 {
			m.complete(c)
		}
		return nil, true
	case "shift+tab":
		// Cycles the approval mode of the next runs: ask → auto → never.
		next := map[string]string{"ask": "auto", "auto": "never", "never": "ask"}[m.state.Approve]
		if next == "" {
			next = "ask"
		}
		return m.slash("approve", next), true
	case "ctrl+o":
		if m.lastTool != "" {
			m.commit(paint(styleDim, indent(m.lastTool)))
		}
		return nil, true
	case "ctrl+g":
		return m.openEditor(), true
	case "pgup", "pgdown":
		if m.opt.Fullscreen {
			var c tea.Cmd
			m.view, c = m.view.Update(k)
			return c, true
		}
	}
	return nil, false
}

// approvalKey answers the pending approval: y, a and n on an empty editor
// (lower case: a sentence starts with a capital, so "No, use echo" is
// text); Enter after text denies with the text; Esc denies and aborts.
func (m *Model) approvalKey(s string) (tea.Cmd, bool) {
	ap := m.approval
	answer := func(r approvalReply, line string) {
		ap.reply <- r
		m.approval = nil
		m.commit(paint(styleNotice, line))
	}
	empty := m.editor.Value() == ""
	switch {
	case empty && s == "y":
		answer(approvalReply{answer: tool.AnswerYes}, "✓ allowed "+ap.Call.Name+" once")
		return nil, true
	case empty && s == "a":
		answer(approvalReply{answer: tool.AnswerAlways}, "✓ allowed "+ap.Call.Name+" for this session")
		return nil, true
	case empty && s == "n":
		answer(approvalReply{answer: tool.AnswerNo}, "✗ denied "+ap.Call.Name)
		return nil, true
	case s == "enter" && !empty:
		text := strings.TrimSpace(m.editor.Value())
		m.editor.Reset()
		answer(approvalReply{answer: tool.AnswerNo, text: text}, "✗ denied "+ap.Call.Name+": "+text)
		return nil, true
	case s == "esc":
		answer(approvalReply{answer: tool.AnswerNo}, "✗ denied "+ap.Call.Name)
		return nil, false // and Esc aborts the run
	}
	return nil, false
}

// slash runs a slash command: the chat's own here, the rest on the
// backend, in the background.
func (m *Model) slash(name, args string) tea.Cmd {
	switch name {
	case "help":
		m.commit(paint(styleNotice, helpText()))
		return nil
	case "quit":
		if m.running {
			m.opt.Backend.Abort()
		}
		m.quitting = true
		return nil
	case "cost":
		m.commit(paint(styleNotice, costLine(m.usage)))
		return nil
	case "copy":
		if m.lastReply == "" {
			m.commit(paint(styleError, "✗ /copy: no reply yet"))
			return nil
		}
		m.commit(paint(styleNotice, fmt.Sprintf("copied the last reply (%d characters) to the clipboard", len(m.lastReply))))
		return tea.SetClipboard(m.lastReply)
	}
	if m.running && (name == command.Compact || name == "new" || name == "resume" || name == "fork" || name == "approve") {
		m.commit(paint(styleError, "✗ /"+name+": wait for the run to end, or Esc to abort it"))
		return nil
	}
	if m.cmdBusy != "" {
		m.commit(paint(styleError, "✗ /"+name+": /"+m.cmdBusy+" is still running"))
		return nil
	}
	m.cmdBusy = name
	b := m.opt.Backend
	return func() tea.Msg {
		out, err := b.Command(context.Background(), name, args)
		return commandDoneMsg{name: name, out: out, err: err}
	}
}

func helpText() string {
	var b strings.Builder
	b.WriteString("commands:\n")
	for _, c := range command.All(command.Chat) {
		name := "/" + c.Name
		if c.Args != "" {
			name += " " + c.Args
		}
		fmt.Fprintf(&b, "  %-28s %s\n", name, c.Summary)
	}
	b.WriteString("keys:\n")
	for _, k := range [][2]string{
		{"Enter", "send; while a run goes, steer it"},
		{"Alt+Enter", "queue a follow-up for when the run ends"},
		{"Shift+Enter, Ctrl+J", "new line"},
		{"Esc", "abort the run; queued messages come back to the editor"},
		{"Ctrl+C", "clear the editor; twice quits"},
		{"Ctrl+O", "print the last tool output in full"},
		{"Tab", "complete @file and /command"},
		{"Shift+Tab", "cycle the approval mode: ask, auto, never"},
		{"Ctrl+G", "edit the message in $VISUAL or $EDITOR"},
		{"y / a / n", "answer an approval: once, for the session, deny (or type why, then Enter)"},
	} {
		fmt.Fprintf(&b, "  %-28s %s\n", k[0], k[1])
	}
	return strings.TrimRight(b.String(), "\n")
}

func (m *Model) openEditor() tea.Cmd {
	f, err := os.CreateTemp("", "agentloop-msg-*.md")
	if err != nil {
		m.commit(paint(styleError, "✗ editor: "+err.Error()))
		return nil
	}
	path := f.Name()
	_, err = f.WriteString(m.editor.Value())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		m.commit(paint(styleError, "✗ editor: "+err.Error()))
		return nil
	}
	ed := m.opt.Editor
	if ed == "" {
		ed = "vi"
	}
	// $EDITOR may carry arguments ("code --wait"): the shell splits it.
	c := exec.Command("sh", "-c", ed+` "$1"`, "sh", path)
	return tea.ExecProcess(c, func(err error) tea.Msg { return editorDoneMsg{path: path, err: err} })
}

// View is the live region: the streaming tail, running tools, a pending
// approval, queued messages, the editor and the status line, capped at the
// terminal's height − 2.
func (m Model) View() tea.View {
	var v tea.View
	if m.quitting {
		return v // leave the scrollback, not the editor, behind
	}

	live := m.live()
	if m.opt.Fullscreen {
		v.AltScreen = true
		v.MouseMode = tea.MouseModeCellMotion
		v.SetContent(m.view.View() + "\n" + live)
	} else {
		// While prints are under way the frame keeps its height: the
		// renderer inserts printed lines relative to the frame it drew
		// last, and a frame that shrank meanwhile leaves its old top
		// lines in the scrollback.
		if pad := m.floor - (strings.Count(live, "\n") + 1); pad > 0 {
			live = strings.Repeat("\n", pad) + live
		}
		v.SetContent(live)
	}
	return v
}

// Live returns the live region as text (for tests and the fullscreen view).
func (m Model) Live() string { return m.live() }

func (m Model) liveHeight() int { return strings.Count(m.live(), "\n") + 1 }

func (m Model) live() string {
	var parts []string
	if m.thinking != "" {
		parts = append(parts, paint(styleDim, "✻ "+truncate(lastLine(m.thinking), m.width-2)))
	}
	if m.tail != "" {
		parts = append(parts, wrapTail(m.tail, m.width, m.tailLines()))
	}
	for _, t := range m.tools {
		line := fmt.Sprintf("%s %s %s · %s", spinner(m.frame), t.name, t.args, elapsed(m.now().Sub(t.started)))
		parts = append(parts, paint(styleTool, truncate(line, m.width)))
		if t.last != "" {
			parts = append(parts, paint(styleDim, truncate("  │ "+t.last, m.width)))
		}
	}
	if m.running && len(m.tools) == 0 && m.tail == "" && m.thinking == "" && m.approval == nil {
		parts = append(parts, paint(styleDim, fmt.Sprintf("%s working · %s", spinner(m.frame), elapsed(m.now().Sub(m.runStart)))))
	}
	if m.approval != nil {
		parts = append(parts, approvalBox(*m.approval, m.width))
	}
	for _, q := range m.queued {
		kind := "steer"
		if q.follow {
			kind = "follow-up"
		}
		parts = append(parts, paint(stylePill, truncate("↳ "+kind+": "+oneLine(q.text), m.width)))
	}
	for _, t := range m.afterRun {
		parts = append(parts, paint(stylePill, truncate("↳ next: "+oneLine(t), m.width)))
	}
	if c := m.completions(); len(c) > 0 {
		parts = append(parts, paint(styleDim, truncate(strings.Join(c[:min(len(c), 6)], "  "), m.width)))
	}
	parts = append(parts, m.editor.View())
	status := m.statusLine()
	if m.hint != "" {
		status = m.hint + " · " + status
	}
	parts = append(parts, paint(styleStatus, truncate(status, m.width)))
	out := strings.Join(parts, "\n")
	// The live region never grows past the screen: keep its bottom.
	if lines := strings.Split(out, "\n"); len(lines) > max(3, m.height-2) {
		out = strings.Join(lines[len(lines)-max(3, m.height-2):], "\n")
	}
	return out
}

func (m Model) statusLine() string {
	st := m.state
	parts := []string{orDash(st.Model)}
	th := st.Thinking
	if th == "" {
		th = "off"
	}
	parts = append(parts, "thinking "+th)
	parts = append(parts, count(m.usage.Total)+" tokens")
	parts = append(parts, fmt.Sprintf("$%.4f", m.usage.Cost.Total))
	if st.Approve != "" {
		parts = append(parts, "approve "+st.Approve)
	}
	if m.cmdBusy != "" {
		parts = append(parts, "/"+m.cmdBusy+" …")
	}
	return strings.Join(parts, " · ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func costLine(u llm.Usage) string {
	return fmt.Sprintf("tokens: %s in, %s out, %s cache read, %s cache write (%s total); cost $%.4f",
		count(u.Input), count(u.Output), count(u.CacheRead), count(u.CacheWrite), count(u.Total), u.Cost.Total)
}
