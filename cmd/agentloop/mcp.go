package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/tool/mcp"
)

func newMCPCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Inspect the MCP servers a run would start",
	}
	var cwd string
	var files []string
	var trust bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Start every configured MCP server, list its status and tools, and stop it",
		Long: `Servers come from $AGENTLOOP_HOME/mcp.json, <workspace>/.mcp.json (only in a trusted
workspace: see "agentloop trust") and --mcp-config files, in the format of Claude Code's .mcp.json:
{"mcpServers": {"name": {"command": "...", "args": [...], "env": {...}} | {"type": "http", "url": "...", "headers": {...}}}}.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			home, ws, err := homeAndWorkspace(env, cwd)
			if err != nil {
				return err
			}
			trusted := trust
			if !trusted {
				if trusted, err = hook.Trusted(home, ws); err != nil {
					return err
				}
			}
			cfg, err := mcp.Load(mcp.LoadOptions{Home: home, Workspace: ws, TrustWorkspace: trusted, Files: files})
			if err != nil {
				return err
			}
			var skipped []string
			if !trusted {
				skipped = untrustedMCPServers(ws)
			}
			skippedLine := fmt.Sprintf("%s is not trusted, so its .mcp.json servers are skipped: %s (run \"agentloop trust\" to allow them, or pass --trust)",
				ws, strings.Join(skipped, ", "))
			// A server that fails to start is a row of the table, not a
			// log line on stderr.
			// The servers get the environment a run gives them: without
			// the toolEnv deny list's variables and the models file's keys.
			settings, err := settingsTools(home)
			if err != nil {
				return err
			}
			te := settings.ToolEnv
			keepKeysFromTools(env, &runFlags{}, home, nil, &te)
			m, err := mcp.Start(c.Context(), cfg, &mcp.Options{Logger: slog.New(slog.DiscardHandler),
				EnvDeny: te.Deny, EnvAllow: te.Allow, Secrets: te.secrets})
			if err != nil {
				return err
			}
			defer m.Close()
			status := m.Status()
			if len(status) == 0 {
				if len(skipped) > 0 {
					fmt.Fprintln(env.stdout, "no MCP servers started: "+skippedLine)
					return nil
				}
				fmt.Fprintln(env.stdout, "no MCP servers configured")
				return nil
			}
			if len(skipped) > 0 {
				fmt.Fprintln(env.stderr, "agentloop: warning: "+skippedLine)
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATUS\tTOOLS\tSOURCE")
			for _, s := range status {
				state := string(s.State)
				if s.Err != nil {
					state += ": " + oneLine(s.Err.Error(), 80)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Transport, state, strings.Join(s.Tools, ", "), s.Source)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&cwd, "cwd", "", "workspace (default: the current directory)")
	list.Flags().StringSliceVar(&files, "mcp-config", nil, "extra MCP configuration files")
	list.Flags().BoolVar(&trust, "trust", false, "treat the workspace as trusted")
	cmd.AddCommand(list)
	return cmd
}

// untrustedMCPServers names the servers of a workspace's own .mcp.json, for
// the warning that they were skipped.
func untrustedMCPServers(ws string) []string {
	path := filepath.Join(ws, ".mcp.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	cfg, err := mcp.Parse(data, func(string) (string, bool) { return "", false })
	if err != nil {
		return []string{path + " (unreadable)"}
	}
	return cfg.Names()
}
