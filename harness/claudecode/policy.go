package claudecode

import (
	"strings"

	"github.com/agentloop/agentloop/harness"
)

// toolsArgs is the --tools that makes only those of Claude Code's own
// tools available that the run's tool policy allows (harness.ToolAllowed),
// so that a tool left out is never offered to the model; `--tools ""` when
// it allows none. It is nil (Claude Code's default set) when the run has
// no policy or the policy allows every tool Claude Code has. Our MCP
// tools (mcp__agentloop__*) are not built-in tools: --tools leaves them be.
func toolsArgs(a *harness.Attempt) []string {
	keep, all := a.AllowedTools(harness.ClaudeCodeTools, harness.ClaudeCodeTool)
	if all {
		return nil
	}
	return []string{"--tools", strings.Join(keep, ",")}
}

// refuseNative is the reason to refuse a permission request for one of
// Claude Code's own tools that the run's tool policy leaves out ("" lets
// it go on to the hooks and the approval): defence in depth behind
// --tools, for a tool offered anyway (a newer Claude Code's, a plugin's).
func refuseNative(a *harness.Attempt, name string) string {
	if _, own := ownTool(name); own {
		return ""
	}
	if ok, reason := a.ToolAllowed(harness.ClaudeCodeTool(name)); !ok {
		return reason
	}
	return ""
}
