package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/reply"
	"github.com/agentloop/agentloop/runner"
)

// eventReply is the printer's own --json line after each assistant message:
// its text as people see it (reasoning tags stripped), beside the raw text
// the message_update and message_end events carry.
const eventReply agent.EventType = "reply"

// printer shows a run: with --json every event as one line on stdout;
// otherwise the assistant's text on stdout, and tool calls, notices (one
// line per retry, compaction and lane wait) and a final usage line on
// stderr.
type printer struct {
	out, errw io.Writer
	json      bool
	verbose   bool       // --verbose: each tool's result on stderr too
	agents    *runAgents // the line of each child that ends
	enc       *json.Encoder
	info      llm.ModelInfo

	atLineStart bool // stdout ends with a newline (or nothing was written)
	turns       int
	tools       int

	// shown is the text of the current assistant reply printed so far.
	shown strings.Builder
	// replay is the text a failed reply had shown before a retry; the
	// retried reply's text is printed only where it goes beyond it, so a
	// retry never shows the same words twice. got is the retried reply's
	// text so far.
	replay    string
	replaying bool
	got       strings.Builder

	// strip removes <think> blocks and <final> tags from the text shown.
	strip *reply.Stripper

	// loops holds, by call id, the loop detection reported for a call that
	// has not started yet: it is shown on the call's own line, so a loop
	// prints one line per call.
	loops map[string]loopNote
	// ended holds the calls of this turn whose line is printed already: a
	// detection made after the call (a tool that does not exist) gets a
	// line of its own.
	ended map[string]bool

	// status is the terminal's status line (status.go), nil without one.
	status *status
}

// loopNote is a loop detection waiting for its call's line.
type loopNote struct {
	kind, message string
	refused       bool // the call does not run: its ✗ line is this one
}

func newPrinter(env *cliEnv, jsonOut bool, info llm.ModelInfo) *printer {
	p := &printer{out: env.stdout, errw: env.stderr, json: jsonOut, info: info, atLineStart: true, strip: reply.NewStripper(nil)}
	if jsonOut {
		p.enc = json.NewEncoder(env.stdout)
		p.enc.SetEscapeHTML(false)
	}
	return p
}

func (p *printer) event(re runner.Event) {
	ev := re.Agent
	if p.json {
		p.encode(re)
		if ev != nil && ev.Type == agent.EventMessageEnd && ev.Message != nil && ev.Message.Role == llm.RoleAssistant {
			// The reply line annotates the message_end before it: it
			// carries that event's envelope (the same seq).
			p.encode(runner.Event{Type: eventReply, Seq: re.Seq, RunID: re.RunID, SessionID: re.SessionID,
				Notice: &runner.Notice{Message: reply.StripTags(ev.Message.Text(), nil)}})
		}
		return
	}
	p.status.event(re)
	if ev == nil {
		p.runnerEvent(re)
		return
	}
	switch ev.Type {
	case agent.EventTurnStart:
		p.turns++
		clear(p.ended)
	case agent.EventMessageStart:
		if ev.Message != nil && ev.Message.Role == llm.RoleAssistant {
			p.shown.Reset()
			p.strip.Reset()
			if p.replay != "" {
				p.replaying = true
				p.got.Reset()
			}
		}
	case agent.EventMessageUpdate:
		if ev.LLM != nil && ev.LLM.Type == llm.EventTextDelta {
			p.delta(p.strip.Write(ev.LLM.Delta))
		}
	case agent.EventMessageEnd:
		if ev.Message != nil && ev.Message.Role == llm.RoleAssistant {
			p.delta(p.strip.Flush())
			p.replaying = false
			if !ev.Message.StopReason.Failed() {
				p.replay = ""
			}
		}
	case agent.EventRetryReset:
		// The agent withdrew a reply cut off at its output limit and asks
		// again: what it showed stays, the new reply continues it.
		p.replay += p.shown.String()
		p.replaying = false
	case agent.EventToolExecutionStart:
		p.tools++
		p.endLine()
		line := fmt.Sprintf("→ %s %s", ev.ToolName, oneLine(string(ev.Args), 120))
		if n, ok := p.loops[ev.ToolCallID]; ok {
			mark := "⚠"
			if n.refused {
				mark = "✗"
			}
			line += fmt.Sprintf("  %s loop detection (%s): %s", mark, n.kind, oneLine(n.message, 200))
		}
		fmt.Fprintln(p.errw, line)
	case agent.EventToolExecutionEnd:
		n, looped := p.loops[ev.ToolCallID]
		delete(p.loops, ev.ToolCallID)
		if p.ended == nil {
			p.ended = map[string]bool{}
		}
		p.ended[ev.ToolCallID] = true
		if looped && n.refused {
			return // its line said so
		}
		if ev.Result != nil && ev.Result.IsError {
			fmt.Fprintf(p.errw, "  ✗ %s: %s\n", ev.ToolName, oneLine(ev.Result.Text(), 200))
		} else if ev.Result != nil && p.verbose {
			fmt.Fprintf(p.errw, "  ← %s: %s\n", ev.ToolName, oneLine(ev.Result.Text(), 300))
		}
	case agent.EventHookError:
		p.endLine()
		fmt.Fprintf(p.errw, "agentloop: hook %s: %v\n", ev.Hook, ev.Err)
	case agent.EventStopContinuation:
		p.endLine()
		fmt.Fprintf(p.errw, "agentloop: %s (%d of at most %d)\n", continuationText(ev.Reason), ev.Count, ev.Max)
	}
}

// continuationText says in words why the run went on where it would have
// stopped.
func continuationText(reason string) string {
	switch reason {
	case agent.ContinueStopHook:
		return "a Stop hook asked the model to keep going"
	case agent.ContinueMaxTokens:
		return "the reply was cut off at its output limit; asking the model to continue"
	case agent.ContinueTokenBudget:
		return "the token budget is not spent; the model keeps going"
	case agent.ContinueRevision:
		return "a finalize hook asked for a revision"
	}
	return "the run goes on (" + reason + ")"
}

// runnerEvent shows the events of the runner and of compaction.
func (p *printer) runnerEvent(ev runner.Event) {
	switch ev.Type {
	case runner.EventSubagentEnd:
		if ev.Subagent != nil && p.agents != nil && !ev.Subagent.Background {
			p.endLine()
			fmt.Fprintln(p.errw, p.agents.line(ev.Subagent))
		}
	case runner.EventLoopDetected:
		if ev.Loop == nil || ev.Loop.CallID == "" || ev.Notice == nil {
			p.notice(ev)
			return
		}
		n := *ev.Notice
		callID := ev.Loop.CallID
		msg := n.Message
		if i := strings.Index(msg, "): "); i >= 0 && strings.HasPrefix(msg, "loop detection (") {
			msg = msg[i+3:] // the line names the tool and the kind already
		}
		if p.ended[callID] {
			p.endLine()
			fmt.Fprintf(p.errw, "  ⚠ loop detection (%s): %s\n", n.Reason, oneLine(msg, 200))
			return
		}
		if p.loops == nil {
			p.loops = map[string]loopNote{}
		}
		p.loops[callID] = loopNote{kind: n.Reason, message: msg, refused: n.Reason != "warning"}
	case runner.EventRetry, runner.EventCompactionRetry, runner.EventOverflowRetry, runner.EventTruncationRetry,
		runner.EventTimeoutCompaction, runner.EventThinkingFallback, runner.EventProfileRotation, runner.EventModelFallback:
		if ev.Notice == nil {
			return
		}
		n := *ev.Notice
		if n.Streamed && !p.atLineStart {
			// What the failed reply showed stays on screen; the retry
			// continues it rather than repeating it, so stdout stays
			// exactly the reply: the notice breaks the line on stderr only.
			p.replay += p.shown.String()
			fmt.Fprintf(p.errw, "\nagentloop: %s\n", n.Message)
			return
		}
		if n.Streamed {
			p.replay += p.shown.String()
		}
		p.notice(ev)
	default:
		p.notice(ev)
	}
}

func (p *printer) encode(ev runner.Event) {
	if err := p.enc.Encode(ev); err != nil {
		fmt.Fprintf(p.errw, "agentloop: cannot encode a %s event: %v\n", ev.Type, err)
	}
}

// delta prints streamed text, skipping what a failed reply already showed.
func (p *printer) delta(s string) {
	if s == "" {
		return
	}
	if !p.replaying {
		p.shown.WriteString(s)
		p.text(s)
		return
	}
	p.got.WriteString(s)
	got := p.got.String()
	switch {
	case strings.HasPrefix(p.replay, got):
		// Still repeating what is on screen.
	case strings.HasPrefix(got, p.replay):
		rest := got[len(p.replay):]
		p.replaying, p.replay = false, ""
		p.shown.WriteString(got)
		p.text(rest)
	default:
		p.replaying, p.replay = false, ""
		p.endLine()
		fmt.Fprintln(p.errw, "agentloop: the retried reply differs from the one cut off; here it is in full")
		p.shown.WriteString(got)
		p.text(got)
	}
}

// quiet lists events that get no line of their own in the text display.
var quiet = map[agent.EventType]bool{
	agent.EventAgentStart: true, agent.EventAgentEnd: true, agent.EventMessageStart: true,
	agent.EventTurnEnd: true, agent.EventToolExecutionUpdate: true,
	runner.EventAttemptStart: true, runner.EventRunStart: true, runner.EventRunEnd: true, runner.EventToolsReady: true,
	"auto_compaction_start": true, "tool_result_truncation": true,
}

// notice prints the one-line form of the events of the runner and of
// compaction (retries, compaction, lane waits, warnings).
func (p *printer) notice(ev runner.Event) {
	if quiet[ev.Type] {
		return
	}
	msg := ""
	switch {
	case ev.Notice != nil:
		msg = ev.Notice.Message
	case ev.Compaction != nil:
		msg = ev.Compaction.Message
		if msg == "" {
			if b, err := llm.MarshalJSON(ev); err == nil {
				msg = string(ev.Type) + " " + oneLine(string(b), 160)
			}
		}
	default:
		return
	}
	p.endLine()
	fmt.Fprintf(p.errw, "agentloop: %s\n", msg)
}

func (p *printer) text(s string) {
	if s == "" {
		return
	}
	io.WriteString(p.out, s)
	p.atLineStart = strings.HasSuffix(s, "\n")
}

func (p *printer) endLine() {
	if !p.atLineStart {
		io.WriteString(p.out, "\n")
		p.atLineStart = true
	}
}

// finish ends the text output and prints the usage line.
func (p *printer) finish(res runner.Result) {
	if p.json {
		return
	}
	p.endLine()
	u := res.Usage
	line := fmt.Sprintf("usage: %d turns, %d tool calls, %s in, %s out", p.turns, p.tools, count(u.Input), count(u.Output))
	if u.CacheRead > 0 || u.CacheWrite > 0 {
		line += fmt.Sprintf(", cache %s read / %s written", count(u.CacheRead), count(u.CacheWrite))
	}
	if u.Cost.Total > 0 {
		line += fmt.Sprintf(", $%.4f", u.Cost.Total)
	}
	if res.Retries > 0 {
		line += fmt.Sprintf(", %d retries", res.Retries)
	}
	if res.Compactions > 0 {
		line += fmt.Sprintf(", %d compactions", res.Compactions)
	}
	switch {
	case res.Model != "":
		line += " (" + res.Model + ")"
	case p.info.ID != "":
		line += " (" + p.info.Provider + "/" + p.info.ID + ")"
	}
	fmt.Fprintln(p.errw, line)
	if res.SessionID != "" {
		fmt.Fprintf(p.errw, "session: %s\n", res.SessionID)
	}
}

func count(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// oneLine folds s onto one line of at most n bytes, cut at a character
// boundary.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
