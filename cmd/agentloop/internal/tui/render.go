package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentloop/agentloop/llm"
)

var (
	styleUser   = lipgloss.NewStyle().Bold(true)
	styleDim    = lipgloss.NewStyle().Faint(true)
	styleError  = lipgloss.NewStyle().Foreground(lipgloss.Red)
	styleNotice = lipgloss.NewStyle().Foreground(lipgloss.Cyan)
	styleTool   = lipgloss.NewStyle().Foreground(lipgloss.Yellow)
	styleOK     = lipgloss.NewStyle().Foreground(lipgloss.Green)
	stylePill   = lipgloss.NewStyle().Foreground(lipgloss.Magenta)
	styleStatus = lipgloss.NewStyle().Faint(true)
	styleAdd    = lipgloss.NewStyle().Foreground(lipgloss.Green)
	styleDel    = lipgloss.NewStyle().Foreground(lipgloss.Red)
	styleBox    = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Yellow).Padding(0, 1)
)

func userBlock(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if i == 0 {
			lines[i] = "› " + l
		} else {
			lines[i] = "  " + l
		}
	}
	return "\n" + paint(styleUser, strings.Join(lines, "\n"))
}

// toolBlock is a finished call: its summary line, the first lines of its
// output and how many more there are.
func toolBlock(name, args, out string, isErr bool, width int) string {
	mark := paint(styleOK, "●")
	if isErr {
		mark = paint(styleError, "✗")
	}
	var b strings.Builder
	b.WriteString(mark + " " + truncate(name+" "+args, width-2))
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return b.String()
	}
	lines := strings.Split(out, "\n")
	shown := lines[:min(len(lines), toolOutputLines)]
	for _, l := range shown {
		b.WriteString("\n" + paint(styleDim, truncate("  │ "+l, width)))
	}
	if n := len(lines) - len(shown); n > 0 {
		b.WriteString("\n" + paint(styleDim, fmt.Sprintf("  … +%d lines (ctrl+o)", n)))
	}
	return b.String()
}

// argsSummary says what a call does in one line: bash's command, a file
// tool's path, else the arguments as JSON.
func argsSummary(name string, raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"command", "path", "pattern"} {
			if s, ok := m[k].(string); ok && len(m) == 1 || ok && k == "command" {
				return oneLine(s)
			}
		}
		if s, ok := m["path"].(string); ok {
			return oneLine(s)
		}
	}
	return oneLine(string(raw))
}

// approvalBox shows a call waiting for approval: a command, or a coloured
// diff for an edit, and the answers.
func approvalBox(a ApprovalMsg, width int) string {
	var b strings.Builder
	who := ""
	if a.Task != "" {
		who = "subagent " + a.Task + ": "
	}
	fmt.Fprintf(&b, "%s%s wants to run:\n", who, a.Call.Name)
	var args struct {
		Command string  `json:"command"`
		Path    string  `json:"path"`
		Content *string `json:"content"`
		OldText *string `json:"oldText"`
		NewText *string `json:"newText"`
		Edits   []struct {
			OldText string `json:"oldText"`
			NewText string `json:"newText"`
		} `json:"edits"`
	}
	_ = json.Unmarshal(a.Call.Args, &args)
	switch {
	case args.Command != "":
		b.WriteString("  $ " + args.Command)
	case args.Path != "" && (args.OldText != nil || len(args.Edits) > 0):
		b.WriteString("  " + args.Path)
		if args.OldText != nil && args.NewText != nil {
			args.Edits = append(args.Edits, struct {
				OldText string `json:"oldText"`
				NewText string `json:"newText"`
			}{*args.OldText, *args.NewText})
		}
		for _, e := range args.Edits {
			for _, l := range strings.Split(e.OldText, "\n") {
				b.WriteString("\n" + paint(styleDel, "  - "+l))
			}
			for _, l := range strings.Split(e.NewText, "\n") {
				b.WriteString("\n" + paint(styleAdd, "  + "+l))
			}
		}
	case args.Path != "" && args.Content != nil:
		fmt.Fprintf(&b, "  write %s (%d lines)", args.Path, strings.Count(*args.Content, "\n")+1)
	default:
		b.WriteString("  " + truncate(string(a.Call.Args), width-6))
	}
	if a.Reason != "" {
		b.WriteString("\n  " + a.Reason)
	}
	b.WriteString("\n[y] allow once  [a] allow for this session  [n] deny  (or type why not, then Enter)")
	return styleBox.Width(min(width, 100)).Render(b.String())
}

// wrapTail is the streaming text as it shows: the last n lines, wrapped to
// width.
func wrapTail(s string, width, n int) string {
	lines := strings.Split(ansi.Wrap(s, max(10, width), ""), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func messageText(m llm.Message) string {
	var parts []string
	for _, c := range m.Content {
		if c.Type == llm.ContentText {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func lastAssistantText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			if t := messageText(msgs[i]); t != "" {
				return t
			}
		}
	}
	return ""
}

func contentText(cs []llm.Content) string {
	var parts []string
	for _, c := range cs {
		switch c.Type {
		case llm.ContentText:
			parts = append(parts, c.Text)
		case llm.ContentImage:
			parts = append(parts, "[image "+c.MimeType+"]")
		}
	}
	return strings.Join(parts, "\n")
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "  │ " + lines[i]
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

func firstLine(s string, width int) string { return truncate(oneLine(s), width) }

func moreLines(s string) string {
	if n := strings.Count(strings.TrimSpace(s), "\n"); n > 0 {
		return fmt.Sprintf(" (+%d lines)", n)
	}
	return ""
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func truncate(s string, width int) string {
	if width < 4 {
		width = 4
	}
	return ansi.Truncate(s, width, "…")
}

var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

func spinner(frame int) string { return string(spinnerFrames[frame%len(spinnerFrames)]) }

func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

func count(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// paint styles each line on its own: lipgloss pads a multi-line block to
// its widest line, which would wrap on a narrower terminal.
func paint(st lipgloss.Style, s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = st.Render(l)
		}
	}
	return strings.Join(lines, "\n")
}
