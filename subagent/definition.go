package subagent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/tool"
)

// GeneralAgent is the name of the built-in agent type.
const GeneralAgent = "general"

// Definition is an agent type: what a child of that type is told and may
// use. Files in Claude Code's format define them (LoadDefinitions).
type Definition struct {
	// Name is what the agent tool's "agent" argument names.
	Name string
	// Description says when to use it (shown to the model in the tool's
	// description).
	Description string
	// SystemPrompt is the child's system prompt.
	SystemPrompt string
	// Tools names the tools the child may use; nil inherits the parent's.
	Tools []string
	// Model is a "provider/id" for Config.ResolveModel; "" is the parent's
	// model.
	Model string
	// Path is the file the definition came from ("" for the built-in one).
	Path string
}

// General is the built-in agent type.
func General() Definition {
	return Definition{Name: GeneralAgent, Description: "General-purpose agent for research and multi-step tasks.",
		SystemPrompt: "You are a subagent: you were given one self-contained task by another agent. Do it with the tools you have, " +
			"then answer with a concise report of what you found or did; that answer is all the other agent will see."}
}

// DefinitionDirs returns the directories agent definitions are read from,
// in the order they are read (a later definition of a name replaces an
// earlier one): $AGENTLOOP_HOME/agents, then the workspace's
// .claude/agents and .agentloop/agents.
func DefinitionDirs(home, workspace string) []string {
	var dirs []string
	if home != "" {
		dirs = append(dirs, filepath.Join(home, "agents"))
	}
	if workspace != "" {
		dirs = append(dirs, filepath.Join(workspace, ".claude", "agents"), filepath.Join(workspace, ".agentloop", "agents"))
	}
	return dirs
}

// LoadDefinitions reads the *.md files of dirs (DefinitionDirs), after the
// built-in general agent. A missing directory is skipped; a file that
// cannot be read or has no name is skipped with a warning.
func LoadDefinitions(dirs ...string) (defs []Definition, warnings []string) {
	byName := map[string]int{}
	put := func(d Definition) {
		if i, ok := byName[d.Name]; ok {
			defs[i] = d
			return
		}
		byName[d.Name] = len(defs)
		defs = append(defs, d)
	}
	put(General())
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
		slices.Sort(files)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("agent definition %s: %v", f, err))
				continue
			}
			d, err := ParseDefinition(string(data))
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("agent definition %s: %v", f, err))
				continue
			}
			d.Path = f
			put(d)
		}
	}
	return defs, warnings
}

// ParseDefinition reads one definition file: YAML front matter between
// "---" lines (name, description, tools as a comma-separated string or a
// list, model), then the system prompt. Claude Code's model aliases
// (inherit, sonnet, opus, haiku) mean the parent's model.
func ParseDefinition(text string) (Definition, error) {
	var d Definition
	text = strings.TrimPrefix(text, "\ufeff")
	rest, ok := strings.CutPrefix(strings.ReplaceAll(text, "\r\n", "\n"), "---\n")
	if !ok {
		return d, fmt.Errorf("no front matter (a first line of ---)")
	}
	front, body, ok := strings.Cut(rest, "\n---")
	if !ok {
		return d, fmt.Errorf("the front matter does not end (a line of ---)")
	}
	body = strings.TrimPrefix(body, "-") // tolerate ----
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = ""
	}
	d.SystemPrompt = strings.TrimSpace(body)
	var listKey string
	sc := bufio.NewScanner(strings.NewReader(front))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if item, ok := strings.CutPrefix(trimmed, "- "); ok && listKey == "tools" {
			d.Tools = append(d.Tools, unquote(item))
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), unquote(strings.TrimSpace(val))
		listKey = key
		switch key {
		case "name":
			d.Name = val
		case "description":
			d.Description = val
		case "model":
			switch strings.ToLower(val) {
			case "", "inherit", "sonnet", "opus", "haiku":
			default:
				d.Model = val
			}
		case "tools":
			d.Tools = []string{}
			val = strings.Trim(val, "[]")
			for _, t := range strings.Split(val, ",") {
				if t = unquote(strings.TrimSpace(t)); t != "" {
					d.Tools = append(d.Tools, t)
				}
			}
		}
	}
	if d.Name == "" {
		return d, fmt.Errorf("no name in the front matter")
	}
	if len(d.Tools) == 0 {
		d.Tools = nil // an empty tools line inherits, as an absent one does
	}
	return d, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// toolName maps a definition's tool name to ours: Claude Code's names
// (tool.ClaudeCounterpart) mean the same tools here, so that a
// .claude/agents file's tools list does.
func toolName(n string) string {
	if o, ok := tool.ClaudeCounterpart(n); ok {
		return o
	}
	return n
}
