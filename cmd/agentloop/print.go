package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// printer shows a run: with --json every event as one line on stdout;
// otherwise the assistant's text on stdout, and tool calls, notices and a
// final usage line on stderr.
type printer struct {
	out, errw io.Writer
	json      bool
	enc       *json.Encoder
	info      llm.ModelInfo

	atLineStart bool // stdout ends with a newline (or nothing was written)
	wroteText   bool
	turns       int
	usage       llm.Usage
	tools       int
}

func newPrinter(env *cliEnv, jsonOut bool, info llm.ModelInfo) *printer {
	p := &printer{out: env.stdout, errw: env.stderr, json: jsonOut, info: info, atLineStart: true}
	if jsonOut {
		p.enc = json.NewEncoder(env.stdout)
		p.enc.SetEscapeHTML(false)
	}
	return p
}

func (p *printer) event(ev agent.Event) {
	if p.json {
		if err := p.enc.Encode(ev); err != nil {
			fmt.Fprintf(p.errw, "agentloop: cannot encode a %s event: %v\n", ev.Type, err)
		}
		return
	}
	switch ev.Type {
	case agent.EventTurnStart:
		p.turns++
	case agent.EventMessageUpdate:
		if ev.LLM != nil && ev.LLM.Type == llm.EventTextDelta {
			p.text(ev.LLM.Delta)
		}
	case agent.EventMessageEnd:
		if ev.Message != nil && ev.Message.Role == llm.RoleAssistant && ev.Message.Usage != nil {
			p.usage.Add(*ev.Message.Usage)
		}
	case agent.EventToolExecutionStart:
		p.tools++
		p.endLine()
		fmt.Fprintf(p.errw, "→ %s %s\n", ev.ToolName, oneLine(string(ev.Args), 120))
	case agent.EventToolExecutionEnd:
		if ev.Result != nil && ev.Result.IsError {
			fmt.Fprintf(p.errw, "  ✗ %s: %s\n", ev.ToolName, oneLine(ev.Result.Text(), 200))
		}
	case agent.EventHookError:
		p.endLine()
		fmt.Fprintf(p.errw, "agentloop: hook %s: %v\n", ev.Hook, ev.Err)
	default:
		p.notice(ev)
	}
}

// notice prints the one-line form of events other layers add (retries,
// compaction, lane waits), whose payload is in Data.
func (p *printer) notice(ev agent.Event) {
	switch ev.Type {
	case agent.EventAgentStart, agent.EventAgentEnd, agent.EventMessageStart, agent.EventTurnEnd, agent.EventToolExecutionUpdate:
		return
	}
	if len(ev.Data) == 0 {
		return
	}
	var d struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	p.endLine()
	if d.Message != "" {
		fmt.Fprintf(p.errw, "agentloop: %s\n", d.Message)
	} else {
		fmt.Fprintf(p.errw, "agentloop: %s %s\n", ev.Type, oneLine(string(ev.Data), 160))
	}
}

func (p *printer) text(s string) {
	if s == "" {
		return
	}
	io.WriteString(p.out, s)
	p.wroteText = true
	p.atLineStart = strings.HasSuffix(s, "\n")
}

func (p *printer) endLine() {
	if !p.atLineStart {
		io.WriteString(p.out, "\n")
		p.atLineStart = true
	}
}

// finish ends the text output and prints the usage line.
func (p *printer) finish() {
	if p.json {
		return
	}
	p.endLine()
	u := p.usage
	line := fmt.Sprintf("usage: %d turns, %d tool calls, %s in, %s out", p.turns, p.tools, count(u.Input), count(u.Output))
	if u.CacheRead > 0 || u.CacheWrite > 0 {
		line += fmt.Sprintf(", cache %s read / %s written", count(u.CacheRead), count(u.CacheWrite))
	}
	if u.Cost.Total > 0 {
		line += fmt.Sprintf(", $%.4f", u.Cost.Total)
	}
	if p.info.ID != "" {
		line += " (" + p.info.Provider + "/" + p.info.ID + ")"
	}
	fmt.Fprintln(p.errw, line)
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

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
