package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/harness/acp"
)

// newMCPBridgeCmd is `agentloop mcp-bridge`, hidden: the stdio MCP server
// that --harness acp:<command> offers an ACP agent which takes no HTTP MCP
// servers. The agent starts it; it forwards to the attempt's loopback tool
// server named in its environment, never in its arguments.
func newMCPBridgeCmd(env *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:    "mcp-bridge",
		Short:  "Serve a run's tools over stdio MCP to an ACP agent (started by agentloop itself)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			in, ok := env.stdin.(io.ReadCloser)
			if !ok {
				in = io.NopCloser(env.stdin)
			}
			return acp.ServeBridge(c.Context(), env.getenv(acp.EnvBridgeURL), env.getenv(acp.EnvBridgeToken), in, nopWriteCloser{env.stdout})
		},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
