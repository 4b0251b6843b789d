package pi

import (
	"strings"
	"testing"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/harnesstest"
	"github.com/agentloop/agentloop/tool"
)

// Issue 25: pi is started with a --tools allowlist of the run's tools
// (its own and those our extension registers) when the run's policy
// leaves some of pi's out; --no-tools when nothing is left.
func TestToolsArgs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy *tool.Policy
		tools  *tool.Registry
		want   []string
	}{
		{"no policy", nil, nil, nil},
		{"default", &tool.Policy{}, harnesstest.Tools(t, "read", "grep", "find", "ls", "write", "edit", "bash", "mcp__g__greet"), nil},
		{"--tools read", &tool.Policy{Tools: []string{"read"}}, harnesstest.Tools(t, "read"), []string{"--tools", "read"}},
		{"--read-only with MCP", &tool.Policy{ReadOnly: true}, harnesstest.Tools(t, "read", "grep", "find", "ls", "mcp__g__look"),
			[]string{"--tools", "read,grep,find,ls,mcp__g__look"}},
		{"--no-tools", &tool.Policy{NoTools: true}, harnesstest.Tools(t), []string{"--no-tools"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toolsArgs(&harness.Attempt{Tools: tc.tools, ToolPolicy: tc.policy})
			if len(got) != len(tc.want) || len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1]) {
				t.Errorf("args %q, want %q", got, tc.want)
			}
		})
	}
}

// fakePi is a pi in rpc mode that asks our approval gate about one bash
// call and writes the answer it got to $HARNESSTEST_OUT.
const fakePi = `#!/bin/sh
read start; read prompt
echo '{"type":"response","id":"start","command":"get_state","success":true,"data":{"sessionFile":"/nonexistent/s.jsonl"}}'
echo '{"type":"extension_ui_request","id":"q1","method":"input","title":"agentloop:approve","placeholder":"{\"toolCallId\":\"c1\",\"toolName\":\"bash\",\"input\":{\"command\":\"echo hi > x\"}}"}'
read answer; printf '%s\n' "$answer" > "$HARNESSTEST_OUT"
echo '{"type":"agent_end"}'
read state
echo '{"type":"response","id":"state","command":"get_state","success":true,"data":{"sessionFile":"/nonexistent/s.jsonl"}}'
`

// Issue 25: pi's question about one of its own tools that the run's tool
// policy leaves out (a pi that offered it anyway) is refused before the
// hooks and the approval, with the policy named; allowed, it goes to them.
func TestApprovalGateRefusesToolsOutsideThePolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy *tool.Policy
		tools  []string
		want   string
		asked  bool
	}{
		{"--tools read", &tool.Policy{Tools: []string{"read"}}, []string{"read"}, "Denied: bash is not in this run's tools (--tools read)", false},
		{"default", &tool.Policy{}, []string{"read", "bash"}, `"value":"allow"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, asked := harnesstest.GateAnswer(t, func(c string, env []string) harness.Harness { return New(&Config{Command: c, Env: env}) }, fakePi, tc.tools, tc.policy)
			if !strings.Contains(got, tc.want) || asked != tc.asked {
				t.Errorf("answer %s (hooks and approval asked: %v), want %q (asked: %v)", got, asked, tc.want, tc.asked)
			}
		})
	}
}
