package harness

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/tool"
)

// An engine's own tools answer to the run's tool policy as ours do: each
// has a counterpart among our tools (Claude Code's Bash is bash, Glob is
// find, Task is agent; pi's tools have our names; an ACP call of kind
// execute is bash), and it is offered and let run only when that
// counterpart is among the run's tools (Attempt.Tools, which the policy
// filtered). A tool with no counterpart (WebFetch, WebSearch, an ACP fetch)
// is left to the engine only when the run's tool set is not restricted
// (no --tools, --no-tools, --read-only or readonly profile) and no deny
// names it; the few that touch nothing outside the engine (Internal: a
// to-do list, tool search, thinking) stay in every set but --no-tools. A
// fetch is not among those: a URL carries data out of the process.

// NativeTool is one of an engine's own tools as the run's policy sees it.
type NativeTool struct {
	// Name is the engine's name for it ("Bash", "bash", an ACP call's
	// title).
	Name string
	// Tool is its counterpart among our tools, "" when it has none.
	Tool string
	// Internal says it changes and reaches nothing outside the engine.
	Internal bool
}

// ClaudeCodeTools are the names of Claude Code's built-in tools the
// harness knows (those of 2.1.328 and the older ones it dropped): what it
// may offer when the run's policy leaves some out (`claude --tools`).
// Claude Code ignores a name it does not have.
var ClaudeCodeTools = []string{
	"Task", "Agent", "Bash", "BashOutput", "KillShell", "Monitor", "TaskStop",
	"Read", "NotebookRead", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS",
	"ListAgents", "SendMessage", "TodoWrite", "ToolSearch", "ExitPlanMode", "AskUserQuestion",
	"WebFetch", "WebSearch", "Skill", "Workflow", "CronCreate", "CronDelete", "CronList", "ScheduleWakeup",
	"EnterWorktree", "ExitWorktree", "ReportFindings",
}

// claudeCompanion is the tool of ours a Claude Code tool works with when
// it is not one its permission rules name (tool.ClaudeCounterpart): a
// background shell's output, the agents' mail, a notebook.
func claudeCompanion(name string) string {
	switch name {
	case "BashOutput", "KillShell", "Monitor", "TaskStop":
		return "bash"
	case "NotebookRead":
		return "read"
	case "NotebookEdit":
		return "edit"
	case "ListAgents", "SendMessage":
		return "agent"
	}
	return ""
}

// claudeInternal says a Claude Code tool touches only its own state.
func claudeInternal(name string) bool {
	return name == "TodoWrite" || name == "ToolSearch" || name == "ExitPlanMode"
}

// ClaudeCodeTool is Claude Code's tool of that name.
func ClaudeCodeTool(name string) NativeTool {
	t := NativeTool{Name: name, Internal: claudeInternal(name)}
	if c, ok := tool.ClaudeCounterpart(name); ok {
		t.Tool = c
	} else {
		t.Tool = claudeCompanion(name)
	}
	return t
}

// PiTools are pi's built-in tools, in the order pi lists them: the same
// tools as ours of those names.
var PiTools = []string{"read", "bash", "edit", "write", "grep", "find", "ls"}

// PiTool is pi's tool of that name; registered lists the run's tools
// offered to pi by our extension, whose counterpart is themselves.
func PiTool(name string, registered *tool.Registry) NativeTool {
	t := NativeTool{Name: name}
	if slices.Contains(PiTools, name) {
		t.Tool = name
	} else if registered != nil {
		if _, ok := registered.Get(name); ok {
			t.Tool = name
		}
	}
	return t
}

// ACPCall is an ACP agent's tool call (its kind, title, rawInput and the
// paths of its locations) as one of our tools: kind read is read, edit is
// edit (write when the input is a whole file's content), delete and move
// are write, search is grep, execute is bash; fetch, think and other have
// no counterpart (think is internal). The arguments are the call's input
// with our argument names added (path, command), so permission rules
// written for tool names (Bash(git *), Read(./secrets/**)) and the
// read-only classifier judge it as they judge ours. A call whose kind has
// no counterpart keeps its title and input.
func ACPCall(kind, title string, input json.RawMessage, locations []string) (NativeTool, json.RawMessage) {
	t := NativeTool{Name: title}
	if t.Name == "" {
		t.Name = kind
	}
	var obj map[string]any
	if json.Unmarshal(input, &obj) != nil || obj == nil {
		obj = map[string]any{}
	}
	file := func() {
		if p := acpPath(obj, locations); p != "" {
			obj["path"] = p
		}
	}
	// The kind is the agent's word; the input is what runs. A call whose
	// input carries a shell command is judged as bash, and one carrying a
	// file's new text as an edit, whatever kind it claims, so that a read
	// or think holding "rm -rf ." is not let through as reading.
	if kind != "execute" && acpCommand(obj) != "" {
		kind = "execute"
	} else if kind != "edit" && kind != "execute" && writes(obj) {
		kind = "edit"
	}
	switch kind {
	case "read":
		t.Tool = "read"
		file()
	case "edit":
		t.Tool = "edit"
		if _, whole := firstString(obj, "content", "file_text"); whole {
			if _, partial := firstString(obj, "old_string", "oldText", "old_str"); !partial {
				t.Tool = "write"
			}
		}
		file()
	case "delete", "move":
		t.Tool = "write"
		file()
	case "search":
		t.Tool = "grep"
		file()
	case "execute":
		t.Tool = "bash"
		if c := acpCommand(obj); c != "" {
			obj["command"] = c
		}
	case "think":
		t.Internal = true
		return t, input
	default:
		return t, input
	}
	args, err := json.Marshal(obj)
	if err != nil {
		return t, input
	}
	return t, args
}

// writes says an ACP call's input carries text to put in a file.
func writes(obj map[string]any) bool {
	_, ok := firstString(obj, "content", "file_text", "new_string", "newText", "new_str")
	return ok
}

// acpPath is the path an ACP call names: in its input under one of the
// names agents use, else its first location.
func acpPath(obj map[string]any, locations []string) string {
	if p, ok := firstString(obj, "path", "file_path", "filePath", "abs_path", "notebook_path", "source", "from"); ok {
		return p
	}
	if len(locations) > 0 {
		return locations[0]
	}
	return ""
}

// acpCommand is the shell command an execute call runs: a string, or an
// argument vector ("bash -lc <script>" is the script).
func acpCommand(obj map[string]any) string {
	if c, ok := firstString(obj, "command", "cmd"); ok {
		return c
	}
	v, _ := obj["command"].([]any)
	if v == nil {
		v, _ = obj["cmd"].([]any)
	}
	var words []string
	for _, w := range v {
		s, ok := w.(string)
		if !ok {
			return ""
		}
		words = append(words, s)
	}
	if len(words) == 3 && (words[1] == "-c" || words[1] == "-lc") {
		switch path.Base(words[0]) {
		case "sh", "bash", "zsh", "dash":
			return words[2]
		}
	}
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`;&|<>(){}*?[]#~!") {
			words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}

func firstString(obj map[string]any, keys ...string) (string, bool) {
	for _, k := range keys {
		if s, ok := obj[k].(string); ok && s != "" {
			return s, true
		}
	}
	return "", false
}

// ToolAllowed reports whether the run's tool set lets the engine offer and
// run its tool t; when it does not, reason is what the model reads, naming
// the policy ("bash is not in this run's tools (--tools read)"). Without a
// tool policy (Attempt.ToolPolicy nil) every native tool is allowed, as it
// was before runs had one.
func (a *Attempt) ToolAllowed(t NativeTool) (ok bool, reason string) {
	p := a.ToolPolicy
	if p == nil {
		return true, ""
	}
	what := t.Name
	if t.Tool != "" && t.Tool != t.Name {
		what = fmt.Sprintf("%s (%s here)", t.Name, t.Tool)
	}
	refuse := func(why string) (bool, string) {
		return false, fmt.Sprintf("Denied: %s %s. Do not retry it; carry on with the tools you have, or tell the user what you wanted to do.", what, why)
	}
	if d := denies(p.Deny, t); d != "" {
		return refuse(fmt.Sprintf("is denied in this run (deny %q)", d))
	}
	if t.Tool != "" {
		if a.Tools != nil {
			if _, in := a.Tools.Get(t.Tool); in {
				return true, ""
			}
		}
		return refuse("is not in this run's tools" + policyFlags(p))
	}
	switch {
	case p.NoTools:
		return refuse("is not offered: this run has no tools (--no-tools)")
	case t.Internal:
		return true, ""
	case restricted(p):
		return refuse("has no counterpart among agentloop's tools, and this run's tools are restricted" + policyFlags(p))
	}
	return true, ""
}

// AllowedTools returns those of an engine's tools (names, each as native
// says what it is) that ToolAllowed lets through, and whether that is all
// of them (always so for a run without a tool policy).
func (a *Attempt) AllowedTools(names []string, native func(name string) NativeTool) (keep []string, all bool) {
	if a.ToolPolicy == nil {
		return names, true
	}
	for _, n := range names {
		if ok, _ := a.ToolAllowed(native(n)); ok {
			keep = append(keep, n)
		}
	}
	return keep, len(keep) == len(names)
}

// restricted says the policy names the run's tools, or only reading ones.
func restricted(p *tool.Policy) bool {
	return p.NoTools || p.Tools != nil || p.ReadOnly || p.Profile == tool.ProfileReadOnly
}

// policyFlags names what restricted the run's tools, as the CLI spells it.
func policyFlags(p *tool.Policy) string {
	var f []string
	switch {
	case p.NoTools:
		f = append(f, "--no-tools")
	case p.Tools != nil:
		f = append(f, "--tools "+strings.Join(p.Tools, ","))
	case p.Profile == tool.ProfileReadOnly:
		f = append(f, "--profile readonly")
	}
	if p.ReadOnly && p.Profile != tool.ProfileReadOnly {
		f = append(f, "--read-only")
	}
	if len(f) == 0 {
		return ""
	}
	return " (" + strings.Join(f, " ") + ")"
}

// denies returns the deny entry that names t (its name or its
// counterpart's), "" when none does.
func denies(deny []string, t NativeTool) string {
	for _, d := range deny {
		d = strings.TrimSpace(d)
		for _, n := range []string{t.Name, t.Tool} {
			if n == "" || d == "" {
				continue
			}
			if ok, _ := path.Match(d, n); ok {
				return d
			}
		}
	}
	return ""
}
