package tui

import (
	"regexp"
	"strings"

	"charm.land/glamour/v2"
)

// markdown renders finished assistant text for the scrollback, once per
// block at its commit: glamour, wrapped to the terminal, the model's line
// breaks kept.
type markdown struct {
	width int
	r     *glamour.TermRenderer
}

// trailingPad is the padding glamour puts after a line's text: spaces and
// the escapes between them.
var trailingPad = regexp.MustCompile(`(?:[ \t]|\x1b\[[0-9;]*m)+$`)

func (md *markdown) render(text string, width int) string {
	if md.r == nil || md.width != width {
		r, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(max(20, width-4)), glamour.WithPreservedNewLines())
		if err != nil {
			return text
		}
		md.r, md.width = r, width
	}
	out, err := md.r.Render(escapeHTML(text))
	if err != nil {
		return text
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if t := trailingPad.ReplaceAllString(l, ""); t != l {
			lines[i] = t + "\x1b[0m"
		}
	}
	// Glamour frames a document with blank lines; a block needs none.
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return text
	}
	return strings.Join(lines, "\n")
}

func blank(l string) bool { return strings.TrimSpace(stripANSI(l)) == "" }

var ansiSeq = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]`)

func stripANSI(s string) string { return ansiSeq.ReplaceAllString(s, "") }

// escapeHTML keeps the text's < and & as they are: glamour drops what
// goldmark reads as raw HTML, so "List<T>" or "Checking <a> & <b>" would
// lose words. Code (fences and `spans`) is left alone, where markdown
// shows everything literally.
func escapeHTML(text string) string {
	if !strings.ContainsAny(text, "<&") {
		return text
	}
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		var b strings.Builder
		code := false
		for _, r := range l {
			switch {
			case r == '`':
				code = !code
				b.WriteRune(r)
			case !code && r == '<':
				b.WriteString("&lt;")
			case !code && r == '&':
				b.WriteString("&amp;")
			default:
				b.WriteRune(r)
			}
		}
		lines[i] = b.String()
	}
	return strings.Join(lines, "\n")
}
