package tui

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Chroma's regexp engine (glamour's code highlighting) keeps a clock
// goroutine for the life of the process once a pattern with a timeout ran.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock"))
}

// fakeBackend records what the chat asks of it.
type fakeBackend struct {
	sent, steered, followed, commands []string
	aborts                            int
	closed                            bool // Steer and FollowUp say false
}

func (b *fakeBackend) Send(text string) error { b.sent = append(b.sent, text); return nil }
func (b *fakeBackend) Steer(text string) bool {
	b.steered = append(b.steered, text)
	return !b.closed
}
func (b *fakeBackend) FollowUp(text string) bool {
	b.followed = append(b.followed, text)
	return !b.closed
}
func (b *fakeBackend) Abort() { b.aborts++ }
func (b *fakeBackend) Command(_ context.Context, name, args string) (string, error) {
	b.commands = append(b.commands, name+" "+args)
	return "ran /" + name, nil
}
func (b *fakeBackend) State() State { return State{Model: "faux/faux-1", Approve: "ask"} }

// fauxRun runs steps on the scripted model through a Runner and returns
// the run's events: the input of the reducer, as a real run makes them.
func fauxRun(t *testing.T, prompt string, tools []tool.Tool, steps ...faux.Step) []runner.Event {
	t.Helper()
	m := faux.New(steps...)
	m.Now = func() int64 { return 1_700_000_000_000 }
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Start(t.Context(), runner.Request{Prompt: prompt, Model: m, Info: m.ModelInfo(), Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	var evs []runner.Event
	for ev, err := range h.Events() {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func linesTool(n int) tool.Tool {
	return &tool.Func{ToolName: "lines", ToolDescription: "Prints lines.",
		Parameters: []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			var b strings.Builder
			for i := 1; i <= n; i++ {
				fmt.Fprintf(&b, "line %d\n", i)
			}
			return tool.TextResult(b.String()), nil
		}}
}

// harness drives the model as bubbletea would and writes snapshots of the
// committed blocks and the live region.
type harness struct {
	t    *testing.T
	m    Model
	b    *fakeBackend
	out  strings.Builder
	seen int // committed blocks already in a snapshot
}

func newHarness(t *testing.T, opt Options) *harness {
	b := &fakeBackend{}
	opt.Backend = b
	opt.Now = func() time.Time { return time.Unix(1_700_000_000, 0) }
	if opt.Width == 0 {
		opt.Width, opt.Height = 80, 24
	}
	return &harness{t: t, m: New(opt), b: b}
}

func (h *harness) do(msgs ...tea.Msg) {
	for _, msg := range msgs {
		nm, _ := h.m.Update(msg)
		h.m = nm.(Model)
		// What tea.Println would have printed is printed.
		h.m, _ = h.m.printed()
	}
}

func (h *harness) typeText(s string) {
	for _, r := range s {
		h.do(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func (h *harness) events(evs []runner.Event) {
	for _, ev := range evs {
		h.do(EventMsg{Event: ev})
	}
}

// snap records the blocks committed since the last snapshot and the live
// region now.
func (h *harness) snap(title string) {
	fmt.Fprintf(&h.out, "== %s\n-- committed\n", title)
	for _, b := range h.m.Committed()[h.seen:] {
		h.out.WriteString(ansi.Strip(b) + "\n")
	}
	h.seen = len(h.m.Committed())
	h.out.WriteString("-- live\n" + stripLive(h.m.Live()) + "\n")
}

func stripLive(s string) string {
	lines := strings.Split(ansi.Strip(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

func (h *harness) golden(name string) {
	h.t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got := h.out.String()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			h.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		h.t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, got)
	}
}

// upTo returns the events before the first of type typ (and that one).
func upTo(evs []runner.Event, typ agent.EventType, nth int) (head, rest []runner.Event) {
	for i, ev := range evs {
		if ev.Type == typ {
			if nth--; nth == 0 {
				return evs[:i+1], evs[i+1:]
			}
		}
	}
	return evs, nil
}

func key(code rune, mod tea.KeyMod) tea.KeyPressMsg { return tea.KeyPressMsg{Code: code, Mod: mod} }

// A streamed reply: the tail shows in the live region while it streams,
// and the text is committed once, at its end.
func TestReducerStreamedReply(t *testing.T) {
	evs := fauxRun(t, "hello", nil, faux.Say("Hello there.\nThis is a reply\nin three lines."))
	h := newHarness(t, Options{})
	h.typeText("hello")
	h.do(key(tea.KeyEnter, 0))
	if len(h.b.sent) != 1 || h.b.sent[0] != "hello" {
		t.Fatalf("sent %q", h.b.sent)
	}
	head, rest := upTo(evs, agent.EventMessageUpdate, 4)
	h.events(head)
	h.snap("while the reply streams")
	h.events(rest)
	h.snap("after run_end")
	h.golden("reply")
}

// The prompt shows once, as typed, even when the run's message holds the
// files its @words included; a user message the chat did not send shows.
func TestReducerPromptShownOnce(t *testing.T) {
	h := newHarness(t, Options{})
	h.do(SendMsg{Text: "look at @a.txt"})
	start := func(text string) {
		u := llm.UserText(text)
		h.do(EventMsg{Event: runner.Event{Type: agent.EventMessageStart, Agent: &agent.Event{Type: agent.EventMessageStart, Message: &u}}})
	}
	start("look at @a.txt\n\n<file a.txt>\nhello\n</file>")
	start("a hook says: go on")
	got := ansi.Strip(strings.Join(h.m.Committed(), "\n"))
	if strings.Count(got, "look at @a.txt") != 1 || strings.Contains(got, "<file") || !strings.Contains(got, "› a hook says: go on") {
		t.Errorf("committed:\n%s", got)
	}
}

// A tool call: running in the live region, then committed with its first
// lines and "+N lines"; Ctrl+O prints the whole output.
func TestReducerToolCall(t *testing.T) {
	evs := fauxRun(t, "list", []tool.Tool{linesTool(20)},
		faux.Call("Listing.", "lines", map[string]int{"n": 20}), faux.Say("Twenty lines."))
	h := newHarness(t, Options{})
	h.do(SendMsg{Text: "list"})
	head, rest := upTo(evs, agent.EventToolExecutionStart, 1)
	h.events(head)
	h.snap("while the tool runs")
	h.events(rest)
	h.snap("after run_end")
	h.do(key('o', tea.ModCtrl))
	h.snap("after ctrl+o")
	h.golden("tool")
}

// Markdown is rendered at commit, a paragraph at a time, and a code fence
// is never cut while it streams.
func TestReducerMarkdown(t *testing.T) {
	text := "# Plan\n\nTwo steps:\n\n- read the **file**\n- fix it\n\n```go\nfunc main() {\n\tprintln(\"hi\")\n\n\tprintln(\"bye\")\n}\n```\n\nDone."
	evs := fauxRun(t, "plan", nil, faux.Say(text))
	h := newHarness(t, Options{})
	h.do(SendMsg{Text: "plan"})
	head, rest := upTo(evs, agent.EventMessageUpdate, 8)
	h.events(head)
	h.snap("inside the code fence")
	h.events(rest)
	h.snap("after run_end")
	h.golden("markdown")
}

// Enter while a run goes steers it (a pill until the message is taken),
// Alt+Enter queues a follow-up; Esc aborts and puts the queue back.
func TestReducerSteerFollowUpAbort(t *testing.T) {
	evs := fauxRun(t, "go", nil, faux.Say("ok"))
	h := newHarness(t, Options{})
	h.do(SendMsg{Text: "go"})
	h.events(evs[:1]) // run_start
	h.typeText("also this")
	h.do(key(tea.KeyEnter, 0))
	h.typeText("and later that")
	h.do(key(tea.KeyEnter, tea.ModAlt))
	if len(h.b.steered) != 1 || len(h.b.followed) != 1 {
		t.Fatalf("steered %q, followed %q", h.b.steered, h.b.followed)
	}
	h.snap("two queued")
	u := llm.UserText("also this")
	h.do(EventMsg{Event: runner.Event{Type: agent.EventMessageStart, Agent: &agent.Event{Type: agent.EventMessageStart, Message: &u}}})
	h.snap("the steer is delivered")
	h.do(key(tea.KeyEscape, 0))
	if h.b.aborts != 1 {
		t.Fatalf("%d aborts", h.b.aborts)
	}
	if v := h.m.editor.Value(); v != "and later that" {
		t.Fatalf("editor after Esc: %q", v)
	}
	end := runner.Event{Type: runner.EventRunEnd, End: &runner.Result{Reason: runner.ReasonAborted}}
	h.do(EventMsg{Event: end})
	h.snap("after the abort")
	if len(h.b.sent) != 1 {
		t.Fatalf("an aborted run's queue was sent: %q", h.b.sent)
	}
	h.golden("steer")
}

// Approvals: y allows once; text then Enter denies with the text.
func TestReducerApproval(t *testing.T) {
	h := newHarness(t, Options{})
	h.do(SendMsg{Text: "clean up"})
	h.do(EventMsg{Event: runner.Event{Type: runner.EventRunStart, Start: &runner.RunStart{Model: "faux/faux-1"}}})
	ask := func(name, args string) chan approvalReply {
		ch := make(chan approvalReply, 1)
		h.do(ApprovalMsg{ID: 1, Call: tool.Call{ID: "c1", Name: name, Args: []byte(args)}, reply: ch})
		return ch
	}
	ch := ask("bash", `{"command":"rm -rf build"}`)
	h.snap("asking about bash")
	h.do(tea.KeyPressMsg{Code: 'y', Text: "y"})
	if r := <-ch; r.answer != tool.AnswerYes || r.text != "" {
		t.Fatalf("y answered %+v", r)
	}
	ch = ask("edit", `{"path":"a.go","oldText":"x := 1","newText":"x := 2"}`)
	h.snap("asking about an edit")
	h.typeText("use a constant")
	h.do(key(tea.KeyEnter, 0))
	if r := <-ch; r.answer != tool.AnswerNo || r.text != "use a constant" {
		t.Fatalf("text answered %+v", r)
	}
	if len(h.b.steered) != 0 {
		t.Fatalf("the denial's text was sent as a steer: %q", h.b.steered)
	}
	h.snap("after both answers")
	h.golden("approval")
}

// Slash commands: the chat's own run here, the backend's in the
// background, an unknown one is an error line and reaches nobody.
func TestReducerSlashCommands(t *testing.T) {
	h := newHarness(t, Options{Width: 100})
	h.typeText("/nope")
	h.do(key(tea.KeyEnter, 0))
	h.typeText("/co")
	h.snap("completing /co")
	h.do(key(tea.KeyTab, 0))
	if v := h.m.editor.Value(); v != "/co" { // compact, cost, copy: no longer prefix
		t.Fatalf("tab on /co: %q", v)
	}
	h.typeText("mpa")
	h.do(key(tea.KeyTab, 0))
	if v := h.m.editor.Value(); v != "/compact " {
		t.Fatalf("tab on /compa: %q", v)
	}
	h.typeText("keep the API")
	var cmd tea.Cmd
	nm, cmd := h.m.Update(key(tea.KeyEnter, 0))
	h.m = nm.(Model)
	h.m, _ = h.m.printed()
	// The command runs as a tea.Cmd; run the batch to find it.
	h.do(runCmds(cmd)...)
	if len(h.b.sent) != 0 || len(h.b.commands) != 1 || h.b.commands[0] != "compact keep the API" {
		t.Fatalf("sent %q, commands %q", h.b.sent, h.b.commands)
	}
	h.snap("after /nope and /compact")
	h.golden("slash")
}

// runCmds runs a command tree, leaving out ticks and prints, and returns
// the messages it makes. Every command is waited for: a tick returns
// within its 100 ms (and is dropped), so a slow machine cannot make a
// real command pass for a tick and run on behind the test's back.
func runCmds(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(10 * time.Second):
		panic("a command of the chat did not return within 10 s")
	}
	if _, tick := msg.(tickMsg); tick {
		return nil
	}
	switch msg := msg.(type) {
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, runCmds(c)...)
		}
		return out
	case commandDoneMsg:
		return []tea.Msg{msg}
	}
	return nil
}

// A 2,000-line reply: the live region stays within the screen at every
// event, and every line reaches the scrollback exactly once, in order.
func TestReducerLongReplyBoundedLive(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "reply line %d\n", i)
	}
	evs := fauxRun(t, "long", nil, faux.Say(b.String()))
	h := newHarness(t, Options{Width: 80, Height: 24})
	h.do(SendMsg{Text: "long"})
	maxLive := 0
	for _, ev := range evs {
		h.do(EventMsg{Event: ev})
		maxLive = max(maxLive, strings.Count(h.m.Live(), "\n")+1)
	}
	if maxLive > 22 {
		t.Errorf("the live region grew to %d lines on a 24-line screen", maxLive)
	}
	// Each line of the reply is committed once, in order (markdown gives
	// them a margin).
	var got []string
	for _, blk := range h.m.Committed()[1:] {
		for l := range strings.SplitSeq(ansi.Strip(blk), "\n") {
			got = append(got, strings.TrimSpace(l))
		}
	}
	if len(got) != 2000 {
		t.Fatalf("%d lines committed for a 2,000-line reply", len(got))
	}
	for i, l := range got {
		if want := fmt.Sprintf("reply line %d", i+1); l != want {
			t.Fatalf("committed line %d is %q, want %q", i+1, l, want)
		}
	}
}

// Ctrl+C clears the editor, then a second one within a second quits.
func TestReducerCtrlC(t *testing.T) {
	h := newHarness(t, Options{})
	h.typeText("draft")
	h.do(key('c', tea.ModCtrl))
	if h.m.editor.Value() != "" || h.m.quitting {
		t.Fatalf("first ctrl+c: editor %q, quitting %v", h.m.editor.Value(), h.m.quitting)
	}
	h.do(key('c', tea.ModCtrl))
	if !h.m.quitting {
		t.Fatal("second ctrl+c did not quit")
	}
}

// printed is what the printedMsg after a tea.Println does.
func (m Model) printed() (Model, tea.Cmd) {
	m.printing = false
	return m, nil
}

// @ completes the workspace's file names; Tab takes the common prefix.
func TestReducerFileCompletion(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"README.md", "run.go", "runner_test.go", ".hidden"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "docs"), 0o700); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Options{Cwd: dir})
	h.typeText("look at @ru")
	if c := h.m.completions(); strings.Join(c, " ") != "@run.go @runner_test.go" {
		t.Fatalf("candidates for @ru: %q", c)
	}
	h.do(key(tea.KeyTab, 0))
	if v := h.m.editor.Value(); v != "look at @run" {
		t.Fatalf("tab: %q", v)
	}
	h.typeText("n")
	h.do(key(tea.KeyTab, 0))
	if v := h.m.editor.Value(); v != "look at @runner_test.go " {
		t.Fatalf("tab on the only candidate: %q", v)
	}
	h.typeText("and @d")
	h.do(key(tea.KeyTab, 0))
	if v := h.m.editor.Value(); v != "look at @runner_test.go and @docs/" {
		t.Fatalf("tab on a directory: %q", v)
	}
}

// Shift+Tab cycles the approval mode through the backend's /approve.
func TestReducerShiftTabCyclesApproval(t *testing.T) {
	h := newHarness(t, Options{})
	nm, cmd := h.m.Update(key(tea.KeyTab, tea.ModShift))
	h.m = nm.(Model)
	h.do(runCmds(cmd)...)
	if len(h.b.commands) != 1 || h.b.commands[0] != "approve auto" {
		t.Fatalf("shift+tab from ask ran %q", h.b.commands)
	}
}

// Text that looks like HTML is shown as written, in prose and in code.
func TestMarkdownKeepsAngleBrackets(t *testing.T) {
	md := &markdown{}
	got := ansi.Strip(md.render("Use List<T> & <b>bold</b>, or `a<b && c`:\n\n```go\nif a<b && c {\n```", 80))
	for _, want := range []string{"List<T> & <b>bold</b>", "a<b && c", "if a<b && c {"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
}
