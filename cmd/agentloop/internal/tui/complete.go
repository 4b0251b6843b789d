package tui

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentloop/agentloop/command"
)

// completions are the candidates for the word being typed: /commands at
// the start of the message, @files of the workspace anywhere.
func (m Model) completions() []string {
	v := m.editor.Value()
	if v == "" || strings.HasSuffix(v, " ") || strings.HasSuffix(v, "\n") {
		return nil
	}
	if v[0] == '/' && !strings.ContainsAny(v, " \n") {
		var out []string
		for _, c := range command.All(command.Chat) {
			if strings.HasPrefix("/"+c.Name, v) {
				out = append(out, "/"+c.Name)
			}
		}
		return out
	}
	word := v[strings.LastIndexAny(v, " \n")+1:]
	if !strings.HasPrefix(word, "@") || m.opt.Cwd == "" {
		return nil
	}
	return fileCandidates(m.opt.Cwd, word[1:])
}

// fileCandidates lists the entries of the workspace that start with
// prefix, a path relative to root; directories end in a slash.
func fileCandidates(root, prefix string) []string {
	dir, base := filepath.Split(prefix)
	if strings.Contains(dir, "..") || filepath.IsAbs(dir) {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, base) || strings.HasPrefix(n, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		c := "@" + dir + n
		if e.IsDir() {
			c += "/"
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// complete replaces the word being typed by the candidates' common prefix,
// or by the only one (and a space after a whole name).
func (m *Model) complete(c []string) {
	v := m.editor.Value()
	start := strings.LastIndexAny(v, " \n") + 1
	p := c[0]
	for _, s := range c[1:] {
		for !strings.HasPrefix(s, p) {
			p = p[:len(p)-1]
		}
	}
	if len(c) == 1 && !strings.HasSuffix(p, "/") {
		p += " "
	}
	m.editor.SetValue(v[:start] + p)
}
