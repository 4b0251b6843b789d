package claudecode

import (
	"encoding/json"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/builtin"
)

// flagSettings is what each attempt passes with --settings, on top of the
// settings files Claude Code still reads (the model, env, its own deny
// rules):
//
//   - permissions.ask "*" makes every tool call, built-in or MCP, a
//     can_use_tool question for us, the read-only ones Claude Code would run
//     by itself and those an allow rule of its own settings covers included
//     (in Claude Code ask beats allow; deny still beats ask, so a deny rule
//     of its files keeps refusing without asking);
//   - disableAllHooks: Claude Code runs no hook of its settings files. The
//     same files' hooks (~/.claude/settings.json always, the workspace's
//     .claude/settings.json and settings.local.json when it is trusted) are
//     agentloop's command hooks, which fire for each call we are asked
//     about; without this they fired twice.
const flagSettings = `{"permissions":{"ask":["*"]},"disableAllHooks":true}`

// settingsArgs is the --settings flag of an attempt.
func settingsArgs() []string { return []string{"--settings", flagSettings} }

// native is one of Claude Code's own tools as our approval sees it: how
// its argument fields map onto those of the tool of ours it amounts to
// (harness.ClaudeCodeTool, the one table of counterparts; nil fields keep
// its own name and arguments), and whether it only reads.
type native struct {
	name     string
	fields   []field
	readOnly bool
}

// field is one of Claude Code's argument fields and our name of it.
type field struct{ theirs, ours string }

// natives are the Claude Code tools whose calls are judged as ours. Bash
// is read-only per command, as our bash is. Tools not listed (WebFetch,
// WebSearch, Task, MCP tools of its own settings) are judged by their own
// name: not read-only, so --approve never refuses them and ask asks. A
// slice of plain values, so that it costs nothing at start-up.
var natives = []native{
	{name: "Bash", fields: []field{{"command", "command"}}},
	// Monitor runs its command in a shell as Bash does (its other source,
	// a WebSocket, leaves no command: not read-only, matched by no rule).
	{name: "Monitor", fields: []field{{"command", "command"}}},
	{name: "Read", fields: []field{{"file_path", "path"}, {"offset", "offset"}, {"limit", "limit"}}, readOnly: true},
	{name: "NotebookRead", fields: []field{{"notebook_path", "path"}}, readOnly: true},
	{name: "Write", fields: []field{{"file_path", "path"}, {"content", "content"}}},
	{name: "Edit", fields: []field{{"file_path", "path"}}},
	{name: "MultiEdit", fields: []field{{"file_path", "path"}}},
	{name: "NotebookEdit", fields: []field{{"notebook_path", "path"}}},
	{name: "Grep", fields: []field{{"pattern", "pattern"}, {"path", "path"}, {"glob", "glob"}}, readOnly: true},
	{name: "Glob", fields: []field{{"pattern", "pattern"}, {"path", "path"}}, readOnly: true},
	{name: "LS", fields: []field{{"path", "path"}}, readOnly: true},
	// Claude Code's bookkeeping: it changes nothing of the workspace.
	{name: "TodoWrite", readOnly: true},
	{name: "ToolSearch", readOnly: true},
	{name: "ListAgents", readOnly: true},
	{name: "CronList", readOnly: true},
}

// nativeNamed returns the entry of natives for name.
func nativeNamed(name string) (native, bool) {
	for _, n := range natives {
		if n.name == name {
			return n, true
		}
	}
	return native{}, false
}

// equivalent is the tool.Equivalent of Claude Code's own calls: a
// permission rule written for our read (Read(./.env)) refuses Claude
// Code's Read of that file, and --approve never/ask let its read-only
// calls through without asking anyone, as they do ours.
func equivalent(c tool.Call) (tool.Call, bool, bool) {
	n, ok := nativeNamed(c.Name)
	if !ok {
		return tool.Call{}, false, false
	}
	ours := harness.ClaudeCodeTool(c.Name).Tool
	if n.fields == nil || ours == "" {
		return c, n.readOnly, true
	}
	var in map[string]json.RawMessage
	_ = json.Unmarshal(c.Args, &in) // not an object: no fields, judged on none
	args := make(map[string]json.RawMessage, len(n.fields))
	for _, f := range n.fields {
		if v, ok := in[f.theirs]; ok {
			args[f.ours] = v
		}
	}
	b, err := json.Marshal(args)
	if err != nil {
		b = json.RawMessage(`{}`)
	}
	as := tool.Call{ID: c.ID, Name: ours, Args: b}
	ro := n.readOnly
	if ours == "bash" {
		var cmd string
		_ = json.Unmarshal(in["command"], &cmd)
		ro = builtin.IsReadOnlyCommand(cmd)
	}
	return as, ro, true
}
