package pi

import (
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
