package harness_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/harnesstest"
	"github.com/agentloop/agentloop/tool"
)

// Issue 25: each engine's own tool has our tool as its counterpart, or
// none.
func TestNativeToolMapping(t *testing.T) {
	for name, want := range map[string]string{"Bash": "bash", "Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit",
		"NotebookEdit": "edit", "Grep": "grep", "Glob": "find", "LS": "ls", "Task": "agent", "Agent": "agent",
		"BashOutput": "bash", "Monitor": "bash", "SendMessage": "agent", "WebFetch": "", "WebSearch": "", "TodoWrite": "", "Skill": ""} {
		if got := harness.ClaudeCodeTool(name); got.Tool != want || got.Name != name {
			t.Errorf("harness.ClaudeCodeTool(%q) = %+v, want counterpart %q", name, got, want)
		}
	}
	if !harness.ClaudeCodeTool("TodoWrite").Internal || harness.ClaudeCodeTool("WebFetch").Internal {
		t.Error("TodoWrite touches only Claude Code's state; WebFetch reaches out")
	}
	reg := harnesstest.Tools(t, "mcp__greeter__greet")
	for name, want := range map[string]string{"bash": "bash", "ls": "ls", "mcp__greeter__greet": "mcp__greeter__greet", "subagent": ""} {
		if got := harness.PiTool(name, reg); got.Tool != want {
			t.Errorf("harness.PiTool(%q) = %+v, want counterpart %q", name, got, want)
		}
	}
	for _, tc := range []struct {
		kind, title, input string
		locs               []string
		tool, args         string
	}{
		{"execute", "Run rm", `{"command":"rm -rf x","description":"clean"}`, nil, "bash", `{"command":"rm -rf x","description":"clean"}`},
		{"execute", "Run", `{"command":["bash","-lc","git status"]}`, nil, "bash", `{"command":"git status"}`},
		{"execute", "Run", `{"command":["rm","-rf","my dir"]}`, nil, "bash", `{"command":"rm -rf 'my dir'"}`},
		{"read", "Read a.go", `{"file_path":"/ws/a.go"}`, nil, "read", `{"file_path":"/ws/a.go","path":"/ws/a.go"}`},
		{"read", "Read", `{}`, []string{"/ws/secrets/k"}, "read", `{"path":"/ws/secrets/k"}`},
		{"edit", "edit notes", `{"path":"notes"}`, nil, "edit", `{"path":"notes"}`},
		{"edit", "Write f", `{"file_path":"f","content":"x"}`, nil, "write", `{"content":"x","file_path":"f","path":"f"}`},
		{"edit", "Edit f", `{"file_path":"f","old_string":"a","new_string":"b"}`, nil, "edit", `{"file_path":"f","new_string":"b","old_string":"a","path":"f"}`},
		{"delete", "rm f", `{"path":"f"}`, nil, "write", `{"path":"f"}`},
		{"search", "grep", `{"pattern":"x"}`, nil, "grep", `{"pattern":"x"}`},
		{"fetch", "Fetch https://x", `{"url":"https://x"}`, nil, "", `{"url":"https://x"}`},
		{"other", "", `{"a":1}`, nil, "", `{"a":1}`},
		// A kind that lies: the input says what the call does.
		{"read", "Read notes", `{"command":"rm -rf ."}`, nil, "bash", `{"command":"rm -rf ."}`},
		{"think", "plan", `{"cmd":["rm","-rf","."]}`, nil, "bash", `{"cmd":["rm","-rf","."],"command":"rm -rf ."}`},
		{"search", "find", `{"path":"a.go","old_string":"x","new_string":"y"}`, nil, "edit", `{"new_string":"y","old_string":"x","path":"a.go"}`},
		{"other", "note", `{"path":"a.go","content":"gone"}`, nil, "write", `{"content":"gone","path":"a.go"}`},
	} {
		nt, args := harness.ACPCall(tc.kind, tc.title, json.RawMessage(tc.input), tc.locs)
		if nt.Tool != tc.tool || string(args) != tc.args {
			t.Errorf("harness.ACPCall(%s, %s) = %+v %s, want %q %s", tc.kind, tc.input, nt, args, tc.tool, tc.args)
		}
		if want := tc.title; nt.Name != want && !(want == "" && nt.Name == tc.kind) {
			t.Errorf("harness.ACPCall(%s): name %q, want the title %q", tc.kind, nt.Name, tc.title)
		}
	}
	if !func() bool { nt, _ := harness.ACPCall("think", "plan", nil, nil); return nt.Internal }() {
		t.Error("an ACP think call is internal")
	}
}

// Issue 25: an engine's own tool runs only when its counterpart is among
// the run's tools; one without a counterpart only when the run's tools
// are not restricted, or when it touches nothing outside the engine; a
// refusal names the policy.
func TestToolAllowed(t *testing.T) {
	coding := harnesstest.Tools(t, "read", "grep", "find", "ls", "write", "edit", "bash")
	readonly := harnesstest.Tools(t, "read", "grep", "find", "ls")
	for _, tc := range []struct {
		name   string
		policy *tool.Policy
		tools  *tool.Registry
		native harness.NativeTool
		ok     bool
		reason string
	}{
		{"no policy: as before", nil, nil, harness.ClaudeCodeTool("Bash"), true, ""},
		{"default: Bash", &tool.Policy{}, coding, harness.ClaudeCodeTool("Bash"), true, ""},
		{"default: WebFetch", &tool.Policy{}, coding, harness.ClaudeCodeTool("WebFetch"), true, ""},
		{"default: Task without agent tools", &tool.Policy{}, coding, harness.ClaudeCodeTool("Task"), false, "Task (agent here) is not in this run's tools."},
		{"--tools read: Bash", &tool.Policy{Tools: []string{"read"}}, harnesstest.Tools(t, "read"), harness.ClaudeCodeTool("Bash"), false, "Bash (bash here) is not in this run's tools (--tools read)"},
		{"--tools read: Read", &tool.Policy{Tools: []string{"read"}}, harnesstest.Tools(t, "read"), harness.ClaudeCodeTool("Read"), true, ""},
		{"--tools read: WebFetch", &tool.Policy{Tools: []string{"read"}}, harnesstest.Tools(t, "read"), harness.ClaudeCodeTool("WebFetch"), false, "WebFetch has no counterpart among agentloop's tools, and this run's tools are restricted (--tools read)"},
		{"--tools read: TodoWrite", &tool.Policy{Tools: []string{"read"}}, harnesstest.Tools(t, "read"), harness.ClaudeCodeTool("TodoWrite"), true, ""},
		{"--read-only: pi's bash", &tool.Policy{ReadOnly: true}, readonly, harness.PiTool("bash", readonly), false, "bash is not in this run's tools (--read-only)"},
		{"--read-only: pi's grep", &tool.Policy{ReadOnly: true}, readonly, harness.PiTool("grep", readonly), true, ""},
		{"--read-only: WebSearch", &tool.Policy{ReadOnly: true}, readonly, harness.ClaudeCodeTool("WebSearch"), false, "(--read-only)"},
		{"--profile readonly: Edit", &tool.Policy{Profile: tool.ProfileReadOnly, ReadOnly: true}, readonly, harness.ClaudeCodeTool("Edit"), false, "(--profile readonly)"},
		{"--no-tools: TodoWrite", &tool.Policy{NoTools: true}, harnesstest.Tools(t), harness.ClaudeCodeTool("TodoWrite"), false, "this run has no tools (--no-tools)"},
		{"deny Bash", &tool.Policy{Deny: []string{"bash"}}, harnesstest.Tools(t, "read", "write"), harness.ClaudeCodeTool("Bash"), false, `is denied in this run (deny "bash")`},
		{"deny WebFetch", &tool.Policy{Deny: []string{"WebFetch"}}, coding, harness.ClaudeCodeTool("WebFetch"), false, `WebFetch is denied in this run (deny "WebFetch")`},
		{"deny by glob", &tool.Policy{Deny: []string{"Web*"}}, coding, harness.ClaudeCodeTool("WebSearch"), false, `deny "Web*"`},
		{"ACP execute, --tools read", &tool.Policy{Tools: []string{"read"}}, harnesstest.Tools(t, "read"), func() harness.NativeTool { n, _ := harness.ACPCall("execute", "rm x", nil, nil); return n }(), false, "rm x (bash here) is not in this run's tools (--tools read)"},
		{"ACP fetch, default", &tool.Policy{}, coding, func() harness.NativeTool { n, _ := harness.ACPCall("fetch", "get it", nil, nil); return n }(), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &harness.Attempt{Tools: tc.tools, ToolPolicy: tc.policy}
			ok, reason := a.ToolAllowed(tc.native)
			if ok != tc.ok || !strings.Contains(reason, tc.reason) || ok != (reason == "") {
				t.Errorf("ToolAllowed(%+v) = %v %q, want %v with %q", tc.native, ok, reason, tc.ok, tc.reason)
			}
		})
	}
}
