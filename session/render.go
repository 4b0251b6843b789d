package session

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// RenderOptions tune Render.
type RenderOptions struct {
	// Leaf is the entry to render up to; "" means the transcript's leaf.
	Leaf string
	// Color adds ANSI colours for a terminal.
	Color bool
	// MaxResultLines caps each tool result; 0 means 12, -1 no cap.
	MaxResultLines int
	// Thinking shows thinking blocks.
	Thinking bool
}

const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiCyan  = "\x1b[36m"
	ansiGreen = "\x1b[32m"
	ansiRed   = "\x1b[31m"
)

// Render writes the conversation on the path to the leaf for a terminal:
// one block per message, tool calls with their arguments, results cut to a
// few lines, compactions and model changes as notes.
func Render(w io.Writer, t *Transcript, opts RenderOptions) error {
	bw := bufio.NewWriter(w)
	style := func(code, s string) string {
		if !opts.Color {
			return s
		}
		return code + s + ansiReset
	}
	maxLines := opts.MaxResultLines
	if maxLines == 0 {
		maxLines = 12
	}
	leaf := opts.Leaf
	if leaf == "" {
		leaf = t.Leaf
	}
	fmt.Fprintf(bw, "%s\n", style(ansiBold, terminalSafe(fmt.Sprintf("session %s  %s  %s", t.Header.ID, t.Header.Cwd, t.Header.Timestamp))))
	for _, e := range t.Path(leaf) {
		switch e.Type {
		case EntryMessage:
			if e.Message != nil {
				renderMessage(bw, e.Message, style, maxLines, opts.Thinking)
			}
		case EntryCompaction:
			fmt.Fprintf(bw, "\n%s\n%s\n", style(ansiDim, fmt.Sprintf("── compacted (%d tokens before) ──", e.TokensBefore)), indent(e.Summary))
		case EntryBranchSummary:
			fmt.Fprintf(bw, "\n%s\n%s\n", style(ansiDim, "── branch summary ──"), indent(e.Summary))
		case EntryCustomMessage:
			fmt.Fprintf(bw, "\n%s\n%s\n", style(ansiDim, "["+terminalSafe(e.CustomType)+"]"), indent(contentText(e.Content)))
		case EntryModelChange:
			fmt.Fprintf(bw, "\n%s\n", style(ansiDim, terminalSafe(fmt.Sprintf("── model: %s/%s ──", e.Provider, e.ModelID))))
		case EntryThinkingLevelChange:
			fmt.Fprintf(bw, "\n%s\n", style(ansiDim, fmt.Sprintf("── thinking: %s ──", e.ThinkingLevel)))
		case EntryToolResultTruncate:
			fmt.Fprintf(bw, "\n%s\n", style(ansiDim, terminalSafe(fmt.Sprintf("── result of %s truncated ──", e.ToolCallID))))
		case EntryHarnessBinding:
			line := fmt.Sprintf("── unbound from %s ──", e.Harness)
			if e.NativeID != "" {
				line = fmt.Sprintf("── bound to %s session %s %s──", e.Harness, e.NativeID, orEmpty(e.Version, "(version %s) "))
			}
			fmt.Fprintf(bw, "\n%s\n", style(ansiDim, terminalSafe(line)))
		}
	}
	return bw.Flush()
}

func renderMessage(w io.Writer, m *llm.Message, style func(string, string) string, maxLines int, thinking bool) {
	switch m.Role {
	case llm.RoleUser:
		fmt.Fprintf(w, "\n%s\n%s\n", style(ansiBold+ansiCyan, "user"), indent(contentText(m.Content)))
	case llm.RoleAssistant:
		head := "assistant"
		if m.Model != "" {
			head += " (" + terminalSafe(m.Model) + ")"
		}
		fmt.Fprintf(w, "\n%s\n", style(ansiBold+ansiGreen, head))
		for _, c := range m.Content {
			switch c.Type {
			case llm.ContentText:
				fmt.Fprintf(w, "%s\n", indent(c.Text))
			case llm.ContentThinking:
				if thinking {
					fmt.Fprintf(w, "%s\n", style(ansiDim, indent(c.Thinking)))
				}
			case llm.ContentToolCall:
				fmt.Fprintf(w, "  → %s %s\n", style(ansiBold, terminalSafe(c.Name)), terminalSafe(string(c.Arguments)))
			}
		}
		if m.StopReason.Failed() {
			msg := string(m.StopReason)
			if m.ErrorMessage != "" {
				msg += ": " + m.ErrorMessage
			}
			fmt.Fprintf(w, "  %s\n", style(ansiRed, "✗ "+terminalSafe(msg)))
		}
	case llm.RoleToolResult:
		mark := "←"
		if m.IsError {
			mark = style(ansiRed, "✗")
		}
		fmt.Fprintf(w, "  %s %s\n%s\n", mark, terminalSafe(m.ToolName), indent(headLines(contentText(m.Content), maxLines)))
	default:
		fmt.Fprintf(w, "\n%s\n%s\n", style(ansiDim, terminalSafe(string(m.Role))), indent(contentText(m.Content)))
	}
}

func contentText(cs []llm.Content) string {
	var b strings.Builder
	for _, c := range cs {
		switch c.Type {
		case llm.ContentText:
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(c.Text)
		case llm.ContentImage:
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "[image %s, %d bytes base64]", c.MimeType, len(c.Data))
		}
	}
	return b.String()
}

func headLines(s string, n int) string {
	if n < 0 {
		return s
	}
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) <= n {
		return s
	}
	more := strings.Count(lines[n], "\n") + 1
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… %d more lines", more)
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(terminalSafe(s), "\n"), "\n", "\n    ")
}

// terminalSafe shows the control characters of s (but newline and tab) as
// visible symbols, so that text from a model or a tool (a file's escape
// sequences, a carriage return) cannot clear, retitle or rewrite the
// terminal it is rendered on.
func terminalSafe(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case !isControl(r):
			return r
		case r < 0x20:
			return 0x2400 + r // the Control Pictures block: ␛, ␍, ␇ ...
		case r == 0x7f:
			return '\u2421'
		}
		return '\uFFFD'
	}, s)
}

func isControl(r rune) bool {
	return r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r < 0xa0)
}

// ExportMarkdown writes the conversation on the path to leaf ("" for the
// transcript's leaf) as a Markdown document.
func ExportMarkdown(w io.Writer, t *Transcript, leaf string) error {
	bw := bufio.NewWriter(w)
	if leaf == "" {
		leaf = t.Leaf
	}
	fmt.Fprintf(bw, "# Session %s\n\n", t.Header.ID)
	fmt.Fprintf(bw, "- Directory: `%s`\n- Started: %s\n", t.Header.Cwd, t.Header.Timestamp)
	if s := t.Stats(); s.Tokens > 0 {
		fmt.Fprintf(bw, "- Tokens: %d\n- Cost: $%.4f\n", s.Tokens, s.Cost)
	}
	for _, e := range t.Path(leaf) {
		switch e.Type {
		case EntryMessage:
			if e.Message != nil {
				markdownMessage(bw, e.Message)
			}
		case EntryCompaction:
			fmt.Fprintf(bw, "\n## Summary of the earlier conversation\n\n%s\n", e.Summary)
		case EntryBranchSummary:
			fmt.Fprintf(bw, "\n## Summary of a branch\n\n%s\n", e.Summary)
		case EntryCustomMessage:
			fmt.Fprintf(bw, "\n## %s\n\n%s\n", e.CustomType, contentText(e.Content))
		case EntryModelChange:
			fmt.Fprintf(bw, "\n*Model: %s/%s*\n", e.Provider, e.ModelID)
		}
	}
	return bw.Flush()
}

func markdownMessage(w io.Writer, m *llm.Message) {
	switch m.Role {
	case llm.RoleUser:
		fmt.Fprintf(w, "\n## User\n\n%s\n", contentText(m.Content))
	case llm.RoleAssistant:
		fmt.Fprintf(w, "\n## Assistant\n")
		for _, c := range m.Content {
			switch c.Type {
			case llm.ContentText:
				fmt.Fprintf(w, "\n%s\n", c.Text)
			case llm.ContentToolCall:
				fmt.Fprintf(w, "\n**Tool call** `%s` (`%s`)\n\n%s\n", c.Name, c.ID, fence("json", prettyArgs(c.Arguments)))
			}
		}
		if m.StopReason.Failed() {
			fmt.Fprintf(w, "\n*The reply ended with %s: %s*\n", m.StopReason, m.ErrorMessage)
		}
	case llm.RoleToolResult:
		label := "Result"
		if m.IsError {
			label = "Error result"
		}
		fmt.Fprintf(w, "\n**%s** of `%s` (`%s`)\n\n%s\n", label, m.ToolName, m.ToolCallID, fence("", contentText(m.Content)))
	}
}

// fence wraps s in a code fence longer than any backtick run inside it.
func fence(lang, s string) string {
	n, run := 3, 0
	for _, r := range s {
		if r == '`' {
			run++
			n = max(n, run+1)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", n)
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f
}

func prettyArgs(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a command's > and & as typed
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Export is the JSON export of a session.
type Export struct {
	Header Header `json:"header"`
	Leaf   string `json:"leafId"`
	// Entries is the path from the root to the leaf.
	Entries []Entry `json:"entries"`
	// Messages is the model's context at the leaf.
	Messages   []llm.Message `json:"messages"`
	Stats      Stats         `json:"stats"`
	ExportedAt string        `json:"exportedAt"`
}

// ExportJSON writes the path to leaf ("" for the transcript's leaf), the
// context built from it and the session's totals as one indented JSON
// document.
func ExportJSON(w io.Writer, t *Transcript, leaf string) error {
	if leaf == "" {
		leaf = t.Leaf
	}
	path := t.Path(leaf)
	x := Export{
		Header: t.Header, Leaf: leaf, Entries: make([]Entry, len(path)),
		Messages: t.Context(leaf).Messages, Stats: t.Stats(), ExportedAt: formatTime(time.Now()),
	}
	for i, e := range path {
		x.Entries[i] = *e
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(x)
}

// orEmpty formats v with format, or is "" when v is.
func orEmpty(v, format string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf(format, v)
}
