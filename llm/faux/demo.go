package faux

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// Demo returns the built-in demo model ("faux/demo"): asked anything, it
// lists the working directory with ls, reads one regular file it saw (a
// README* if there is one, else the first file), and answers with a short
// summary of what it found. It needs tools named ls (argument path) and
// read (argument path) in the request; without them it says so.
func Demo() *Model {
	m := New(Func(demoStep))
	m.Info = defaultInfo("demo")
	m.Info.Name = "Faux demo"
	m.Repeat = true
	return m
}

// demoStep decides the demo's next reply from what happened since the last
// user message.
func demoStep(_ context.Context, req *llm.Request) Step {
	if !offers(req, "ls") || !offers(req, "read") {
		return Say("I am the offline demo model: I look around with the ls and read tools, but this run does not offer them.")
	}
	start := 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			start = i + 1
			break
		}
	}
	var lsRes, readRes *llm.Message
	readPath := ""
	for i := start; i < len(req.Messages); i++ {
		m := &req.Messages[i]
		switch {
		case m.Role == llm.RoleToolResult && m.ToolName == "ls" && lsRes == nil:
			lsRes = m
		case m.Role == llm.RoleToolResult && m.ToolName == "read" && readRes == nil:
			readRes = m
		case m.Role == llm.RoleAssistant:
			for _, c := range m.ToolCalls() {
				if c.Name == "read" {
					var a struct{ Path string }
					if json.Unmarshal(c.Arguments, &a) == nil {
						readPath = a.Path
					}
				}
			}
		}
	}
	switch {
	case lsRes == nil:
		return Call("Let me look at what is in this folder.", "ls", map[string]string{"path": "."})
	case lsRes.IsError:
		return Say("I could not list the folder: " + firstLine(lsRes.Text()))
	}
	files, dirs := parseListing(lsRes.Text())
	if readRes == nil {
		if len(files) == 0 {
			return Say(summary(files, dirs) + " There is no regular file for me to read.")
		}
		pick := files[0]
		for _, f := range files {
			if strings.HasPrefix(strings.ToLower(f), "readme") {
				pick = f
				break
			}
		}
		return Call(fmt.Sprintf("I'll read %s.", pick), "read", map[string]string{"path": pick})
	}
	if readRes.IsError {
		return Say(summary(files, dirs) + fmt.Sprintf(" I tried to read %s but could not: %s", readPath, firstLine(readRes.Text())))
	}
	text := readRes.Text()
	lines := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		lines++
	}
	return Say(summary(files, dirs) + fmt.Sprintf(" I read %s (%d lines); it begins: %q.", readPath, lines, firstLine(text)))
}

func offers(req *llm.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// parseListing reads an ls result: one entry a line, directories with a
// trailing slash; notices in brackets or parentheses are skipped.
func parseListing(text string) (files, dirs []string) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "[") || strings.HasPrefix(line, "(") {
			continue
		}
		if strings.HasSuffix(line, "/") {
			dirs = append(dirs, line)
		} else {
			files = append(files, line)
		}
	}
	return files, dirs
}

func summary(files, dirs []string) string {
	if len(files)+len(dirs) == 0 {
		return "This folder is empty."
	}
	all := append(append([]string(nil), files...), dirs...)
	shown := all
	more := ""
	if len(shown) > 8 {
		shown = shown[:8]
		more = fmt.Sprintf(" and %d more", len(all)-8)
	}
	return fmt.Sprintf("This folder has %s and %s: %s%s.",
		plural(len(files), "file"), plural(len(dirs), "directory"), strings.Join(shown, ", "), more)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		// Skip read's line-number prefixes ("  1\t") if any.
		if i := strings.IndexByte(line, '\t'); i >= 0 && strings.TrimSpace(line[:i]) != "" && isDigits(strings.TrimSpace(line[:i])) {
			line = line[i+1:]
		}
		if line = strings.TrimSpace(line); line != "" {
			if r := []rune(line); len(r) > 80 {
				line = string(r[:77]) + "..."
			}
			return line
		}
	}
	return ""
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
