package claudecode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// tool server, and --strict-mcp-config: Claude Code starts no MCP server
// of its own configuration, a workspace's .mcp.json above all, which it
// would start even where agentloop does not trust the workspace (the
// servers agentloop starts are among the run's tools, served here). The
// calls were approved by the permission request that came before them
// (can_use_tool); the server only runs them.
//
// The configuration, bearer token included, is a file only we can read
// in dir: on the command line every user of the machine reads it, and
// the token lets whoever holds it run the run's tools, bash among them.
func mcpArgs(t *toolserver.Server, dir string) ([]string, error) {
	if t == nil {
		return []string{"--strict-mcp-config"}, nil
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{toolsServer: map[string]any{
		"type": "http", "url": t.URL, "headers": map[string]string{"Authorization": "Bearer " + t.Token}}}})
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		return nil, fmt.Errorf("write the MCP configuration: %w", err)
	}
	return []string{"--strict-mcp-config", "--mcp-config", file}, nil
}
