package claudecode

import (
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/harnesstest"
	"github.com/agentloop/agentloop/tool"
)

// Issue 25: Claude Code is started with --tools naming only those of its
// own tools the run's tool policy allows; none at all under --no-tools,
// its default set when nothing is left out.
func TestToolsArgs(t *testing.T) {
	all := harnesstest.Tools(t, "read", "grep", "find", "ls", "write", "edit", "bash", "agent", "agent_send", "agent_stop")
	for _, tc := range []struct {
		name   string
		policy *tool.Policy
		tools  *tool.Registry
		want   string // "-" for no --tools
	}{
		{"no policy", nil, nil, "-"},
		{"default", &tool.Policy{}, all, "-"},
		{"--tools read", &tool.Policy{Tools: []string{"read"}}, harnesstest.Tools(t, "read"), "Read,NotebookRead,TodoWrite,ToolSearch,ExitPlanMode"},
		{"--read-only", &tool.Policy{ReadOnly: true}, harnesstest.Tools(t, "read", "grep", "find", "ls"),
			"Read,NotebookRead,Glob,Grep,LS,TodoWrite,ToolSearch,ExitPlanMode"},
		{"--no-tools", &tool.Policy{NoTools: true}, harnesstest.Tools(t), ""},
		{"deny Bash", &tool.Policy{Deny: []string{"bash"}}, harnesstest.Tools(t, "read", "grep", "find", "ls", "write", "edit", "agent"), "no Bash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := toolsArgs(&harness.Attempt{Tools: tc.tools, ToolPolicy: tc.policy})
			switch {
			case tc.want == "-":
				if args != nil {
					t.Errorf("args %q, want none", args)
				}
			case len(args) != 2 || args[0] != "--tools":
				t.Errorf("args %q, want --tools", args)
			case tc.want == "no Bash":
				got := strings.Split(args[1], ",")
				if slices.Contains(got, "Bash") || slices.Contains(got, "Monitor") || !slices.Contains(got, "Edit") || !slices.Contains(got, "WebFetch") {
					t.Errorf("--tools %s: want every tool but the shell's", args[1])
				}
			case args[1] != tc.want:
				t.Errorf("--tools %q, want %q", args[1], tc.want)
			}
		})
	}
}

// Issue 25: a permission request for a tool of Claude Code's own outside
// the run's tools is refused before the hooks and the approval; our MCP
// tools are judged by the approval alone.
func TestRefuseNative(t *testing.T) {
	a := &harness.Attempt{Tools: harnesstest.Tools(t, "read"), ToolPolicy: &tool.Policy{Tools: []string{"read"}}}
	if r := refuseNative(a, "Bash"); !strings.Contains(r, "Bash (bash here) is not in this run's tools (--tools read)") {
		t.Errorf("Bash: %q", r)
	}
	for _, n := range []string{"Read", "mcp__agentloop__read", "mcp__agentloop__write"} {
		if r := refuseNative(a, n); r != "" {
			t.Errorf("%s refused: %q", n, r)
		}
	}
}

// askingClaude is a claude in stream-json print mode that asks can_use_tool
// about one Bash call and writes the answer it got to $HARNESSTEST_OUT.
const askingClaude = `#!/bin/sh
read prompt
echo '{"type":"system","subtype":"init","session_id":"s1","claude_code_version":"0"}'
echo '{"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"echo hi > x"},"tool_use_id":"c1"}}'
read answer; printf '%s\n' "$answer" > "$HARNESSTEST_OUT"
echo '{"type":"result","subtype":"success","session_id":"s1","result":"ok"}'
`

// Issue 25: Claude Code's permission request for one of its own tools
// that the run's tool policy leaves out (a Claude Code that offered it
// anyway) is refused before the hooks and the approval, the policy named;
// allowed, it goes to them.
func TestPermissionRefusesToolsOutsideThePolicy(t *testing.T) {
	defer goleak.VerifyNone(t) // no TestMain here: the process and its readers end with the attempt
	for _, tc := range []struct {
		name   string
		policy *tool.Policy
		tools  []string
		want   string
		asked  bool
	}{
		{"--read-only", &tool.Policy{ReadOnly: true}, []string{"read"}, "Denied: Bash (bash here) is not in this run's tools (--read-only)", false},
		{"default", &tool.Policy{}, []string{"read", "bash"}, `"behavior":"allow"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, asked := harnesstest.GateAnswer(t, func(c string, env []string) harness.Harness { return New(&Config{Command: c, Env: env}) }, askingClaude, tc.tools, tc.policy)
			if !strings.Contains(got, tc.want) || asked != tc.asked {
				t.Errorf("answer %s (hooks and approval asked: %v), want %q (asked: %v)", got, asked, tc.want, tc.asked)
			}
		})
	}
}
