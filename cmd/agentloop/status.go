package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
)

// The status line: on a terminal, while the run waits for the model or a
// tool runs longer than toolStatusAfter, one line on stderr says so
// (spinner, elapsed time, tokens so far). It is drawn over itself with \r
// and erased (\r, erase to end of line) before anything else is written to
// the terminal, so other lines never mix with it. Nothing of it is written
// when stderr is not a terminal, with --json, or with TERM=dumb.

const (
	// statusTick is how often the line is redrawn (the spinner's pace).
	statusTick = 100 * time.Millisecond
	// toolStatusAfter is how long a tool runs before the line names it.
	toolStatusAfter = time.Second
	// statusQuiet is how long streamed output must pause before the line
	// comes back while the model is still answering (a long tool call
	// being written, thinking after some text).
	statusQuiet = time.Second
	// statusClear returns the cursor to the line start and erases the line.
	statusClear = "\r\x1b[K"
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// statusLine formats the status: spinner frame, what is awaited, the time
// it has taken, and the tokens received so far when there are any; cut to
// fit in width columns (one column left free, so the terminal never wraps).
func statusLine(frame int, what string, elapsed time.Duration, tokens int, width int) string {
	var b strings.Builder
	b.WriteString(spinnerFrames[frame%len(spinnerFrames)])
	b.WriteString(" ")
	b.WriteString(what)
	b.WriteString(" · ")
	b.WriteString(elapsedString(elapsed))
	if tokens > 0 {
		fmt.Fprintf(&b, " · ↓ %s tokens", count(tokens))
	}
	s := b.String()
	if width <= 1 {
		width = 80
	}
	if max := width - 1; utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return s
}

// elapsedString is d in whole seconds under a minute ("3s"), then minutes
// and seconds ("2m05s").
func elapsedString(d time.Duration) string {
	s := int(d / time.Second)
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// statusTool is a tool call that is running.
type statusTool struct {
	name  string
	since time.Time
}

// status is the state behind the line. Its methods are safe for
// concurrent use: events come from the run, ticks from a timer, writes
// from the printer and from whatever else writes to the terminal.
type status struct {
	mu    sync.Mutex
	w     io.Writer        // the terminal
	now   func() time.Time // injected for tests
	width func() int

	shown     string // the line on screen now; "" when none
	frame     int
	lineStart bool      // the last write to the terminal ended a line
	lastOut   time.Time // when anything else was last written

	waiting   bool // a model call is under way
	waitSince time.Time
	thinking  bool
	chars     int // streamed characters of the current model call
	usageOut  int // output tokens the provider reported so far
	tools     map[string]statusTool

	stopped bool
	quit    chan struct{}
	done    chan struct{}
}

func newStatus(w io.Writer, now func() time.Time, width func() int) *status {
	return &status{w: w, now: now, width: width, lineStart: true, tools: map[string]statusTool{}}
}

// terminalStatus returns the status line of a run shown on env, or nil
// when there is none (stderr is not a terminal, --json, TERM=dumb). The
// env it returns writes through the status, so every line written to the
// terminal erases the status first.
func terminalStatus(env *cliEnv, jsonOut bool) (*status, *cliEnv) {
	f, ok := env.stderr.(*os.File)
	if jsonOut || !ok || !fdIsTerminal(f) || env.getenv("TERM") == "dumb" {
		return nil, env
	}
	s := newStatus(f, time.Now, func() int { return terminalWidth(f) })
	e := *env
	e.stderr = s.guard(f)
	// Text on stdout shares the screen only when stdout is the terminal
	// too; text sent to a file or a pipe leaves the status where it is.
	if out, ok := env.stdout.(*os.File); ok && fdIsTerminal(out) {
		e.stdout = s.guard(out)
	}
	return s, &e
}

func fdIsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func terminalWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 80
	}
	return int(ws.Col)
}

// start redraws the line every statusTick until stop.
func (s *status) start() {
	s.quit, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(statusTick)
		defer t.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-t.C:
				s.tick()
			}
		}
	}()
}

// stop ends the redraws and erases the line.
func (s *status) stop() {
	if s == nil {
		return
	}
	if s.quit != nil {
		close(s.quit)
		<-s.done
		s.quit = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.clearLocked()
}

// tick advances the spinner and redraws.
func (s *status) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frame++
	s.drawLocked()
}

// event follows the run: a model call begins at each turn and attempt
// and ends with the assistant message; text on the screen hides the line;
// tool calls run between their start and end events.
func (s *status) event(re runner.Event) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ev := re.Agent
	if ev == nil {
		switch re.Type {
		case runner.EventAttemptStart:
			s.beginWait(now)
		case runner.EventRunEnd:
			s.waiting = false
			clear(s.tools)
		}
		s.drawLocked()
		return
	}
	switch ev.Type {
	case agent.EventTurnStart:
		s.beginWait(now)
	case agent.EventMessageUpdate:
		if ev.LLM == nil {
			break
		}
		switch ev.LLM.Type {
		case llm.EventTextDelta:
			// Not redrawn: the text's write erases the line, and text
			// that shows nothing (a <think> block) leaves it counting.
			s.thinking = false
			s.chars += len(ev.LLM.Delta)
			return
		case llm.EventThinkingDelta:
			s.thinking = true
			s.chars += len(ev.LLM.Delta)
		case llm.EventToolCallDelta:
			s.thinking = false
			s.chars += len(ev.LLM.Delta)
		}
		if p := ev.LLM.Partial; p != nil && p.Usage != nil && p.Usage.Output > 0 {
			s.usageOut = p.Usage.Output
		}
	case agent.EventMessageEnd:
		if ev.Message != nil && ev.Message.Role == llm.RoleAssistant {
			s.waiting = false
		}
	case agent.EventToolExecutionStart:
		s.tools[ev.ToolCallID] = statusTool{name: ev.ToolName, since: now}
	case agent.EventToolExecutionEnd:
		delete(s.tools, ev.ToolCallID)
	case agent.EventAgentEnd:
		s.waiting = false
		clear(s.tools)
	}
	s.drawLocked()
}

func (s *status) beginWait(now time.Time) {
	if !s.waiting {
		s.waitSince = now
	}
	s.waiting, s.thinking, s.chars, s.usageOut = true, false, 0, 0
}

// line is the status to show now, or "" for none.
func (s *status) line() string {
	if s.stopped || !s.lineStart {
		// Never over a half-written line: erasing it would erase text.
		return ""
	}
	now := s.now()
	// A tool that has run long enough comes first: while it runs, the
	// model (if it still streams) is not what the user waits for.
	var long []statusTool
	for _, t := range s.tools {
		if now.Sub(t.since) >= toolStatusAfter {
			long = append(long, t)
		}
	}
	if len(long) > 0 {
		sort.Slice(long, func(i, j int) bool { return long[i].since.Before(long[j].since) })
		what := "running " + visibleName(long[0].name)
		if len(long) > 1 {
			what += fmt.Sprintf(" (+%d more)", len(long)-1)
		}
		return statusLine(s.frame, what, now.Sub(long[0].since), 0, s.width())
	}
	if !s.waiting {
		return ""
	}
	// Output that streams is the progress: the line shows before any,
	// and again only once it has paused.
	if !s.lastOut.Before(s.waitSince) && now.Sub(s.lastOut) < statusQuiet {
		return ""
	}
	what := "waiting for the model"
	if s.thinking {
		what = "thinking"
	}
	tokens := s.usageOut
	if tokens == 0 {
		tokens = (s.chars + 3) / 4
	}
	return statusLine(s.frame, what, now.Sub(s.waitSince), tokens, s.width())
}

// visibleName is a tool name safe to print inside the line.
func visibleName(n string) string {
	return oneLine(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, n), 40)
}

func (s *status) drawLocked() {
	l := s.line()
	if l == s.shown {
		return
	}
	if l == "" {
		s.clearLocked()
		return
	}
	io.WriteString(s.w, "\r"+l+"\x1b[K")
	s.shown = l
}

func (s *status) clearLocked() {
	if s.shown != "" {
		io.WriteString(s.w, statusClear)
		s.shown = ""
	}
}

// guard returns a writer to w (a stream on the status's terminal) that
// erases the line before each write; the line comes back on a later tick.
func (s *status) guard(w io.Writer) io.Writer { return statusGuard{s, w} }

type statusGuard struct {
	s *status
	w io.Writer
}

func (g statusGuard) Write(b []byte) (int, error) {
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	g.s.clearLocked()
	n, err := g.w.Write(b)
	if n > 0 {
		g.s.lineStart = b[n-1] == '\n'
		g.s.lastOut = g.s.now()
	}
	return n, err
}
