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
	fields   map[string]string // Claude Code's field → ours
	readOnly bool
}

var (
	fileFields   = map[string]string{"file_path": "path"}
	searchFields = map[string]string{"pattern": "pattern", "path": "path", "glob": "glob"}
)

// natives are the Claude Code tools whose calls are judged as ours. Bash
// is read-only per command, as our bash is. Tools not listed (WebFetch,
// WebSearch, Task, MCP tools of its own settings) are judged by their own
// name: not read-only, so --approve never refuses them and ask asks.
var natives = map[string]native{
	"Bash": {fields: map[string]string{"command": "command"}},
	// Monitor runs its command in a shell as Bash does (its other source,
	// a WebSocket, leaves no command: not read-only, matched by no rule).
	"Monitor":      {fields: map[string]string{"command": "command"}},
	"Read":         {fields: map[string]string{"file_path": "path", "offset": "offset", "limit": "limit"}, readOnly: true},
	"NotebookRead": {fields: map[string]string{"notebook_path": "path"}, readOnly: true},
	"Write":        {fields: map[string]string{"file_path": "path", "content": "content"}},
	"Edit":         {fields: fileFields},
	"MultiEdit":    {fields: fileFields},
	"NotebookEdit": {fields: map[string]string{"notebook_path": "path"}},
	"Grep":         {fields: searchFields, readOnly: true},
	"Glob":         {fields: map[string]string{"pattern": "pattern", "path": "path"}, readOnly: true},
	"LS":           {fields: map[string]string{"path": "path"}, readOnly: true},
	// Claude Code's bookkeeping: it changes nothing of the workspace.
	"TodoWrite":  {readOnly: true},
	"ToolSearch": {readOnly: true},
	"ListAgents": {readOnly: true},
	"CronList":   {readOnly: true},
}

// equivalent is the tool.Equivalent of Claude Code's own calls: a
// permission rule written for our read (Read(./.env)) refuses Claude
// Code's Read of that file, and --approve never/ask let its read-only
// calls through without asking anyone, as they do ours.
func equivalent(c tool.Call) (tool.Call, bool, bool) {
	n, ok := natives[c.Name]
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
	for theirs, ours := range n.fields {
		if v, ok := in[theirs]; ok {
			args[ours] = v
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
