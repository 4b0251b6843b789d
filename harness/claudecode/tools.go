package claudecode

import (
	"encoding/json"
	"strings"

	"github.com/agentloop/agentloop/harness/internal/toolserver"
)

// toolsServer is the MCP server name the run's tools have in Claude Code:
// they appear there as mcp__agentloop__<tool>.
const toolsServer = toolserver.Name

// toolPrefix is what Claude Code puts before a tool of toolsServer.
const toolPrefix = "mcp__" + toolsServer + "__"

// ownTool returns the run's name of a Claude Code tool name, and whether
// it is one of the run's tools.
func ownTool(name string) (string, bool) { return strings.CutPrefix(name, toolPrefix) }

// mcpArgs is the --mcp-config that points Claude Code at the attempt's
// tool server. The calls were approved by the permission request that
// came before them (can_use_tool); the server only runs them.
func mcpArgs(t *toolserver.Server) []string {
	if t == nil {
		return nil
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{toolsServer: map[string]any{
		"type": "http", "url": t.URL, "headers": map[string]string{"Authorization": "Bearer " + t.Token}}}})
	return []string{"--mcp-config", string(cfg)}
}
