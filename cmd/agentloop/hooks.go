package main

import (
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/hook"
)

func newHooksCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Inspect the shell hooks of settings.json files",
	}
	var cwd string
	var trust bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List every configured hook, its source file and whether it runs here",
		Long: `List the command hooks configured in $AGENTLOOP_HOME/settings.json and ~/.claude/settings.json
(user hooks, always active) and <workspace>/.agentloop/settings.json, .claude/settings.json and
.claude/settings.local.json (project hooks, active only in a trusted workspace: see "agentloop trust"). The format is Claude Code's: {"hooks": {"PreToolUse": [{"matcher": "Bash",
"hooks": [{"type": "command", "command": "...", "timeout": 60}]}]}}.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			home, ws, err := homeAndWorkspace(env, cwd)
			if err != nil {
				return err
			}
			hooks, err := hook.List(hook.LoadOptions{Home: home, Workspace: ws, ClaudeHome: claudeHome(env), Trust: trust})
			if err != nil {
				return err
			}
			if len(hooks) == 0 {
				fmt.Fprintf(env.stdout, "no hooks configured (looked in %s, ~/.claude/settings.json, and %s, .claude/settings.json and .claude/settings.local.json of the workspace)\n",
					filepath.Join(home, "settings.json"), filepath.Join(ws, ".agentloop", "settings.json"))
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EVENT\tMATCHER\tCOMMAND\tTIMEOUT\tSOURCE\tSTATUS")
			for _, h := range hooks {
				status := "active"
				if !h.Active {
					status = "inactive: " + h.Inactive
				}
				m := h.Matcher
				if m == "" {
					m = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Event, m, oneLine(h.Command, 50), h.Timeout, h.Source, status)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&cwd, "cwd", "", "workspace (default: the current directory)")
	list.Flags().BoolVar(&trust, "trust", false, "show the workspace as trusted")
	cmd.AddCommand(list)
	return cmd
}

func newTrustCmd(env *cliEnv) *cobra.Command {
	var remove bool
	cmd := &cobra.Command{
		Use:   "trust [dir]",
		Short: "Trust a workspace: its own hooks and MCP servers may run",
		Long: `Record a directory (default: the current one) as trusted in $AGENTLOOP_HOME/trusted.json.
Commands from a project's own files (<workspace>/.agentloop/settings.json hooks, .mcp.json servers)
run only in a trusted workspace or its subdirectories; elsewhere they are skipped with a warning.
"agentloop run --trust" trusts for one run. --remove takes the trust back.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			home, err := agentloopHome(env.getenv)
			if err != nil {
				return err
			}
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			}
			ws, err := workspaceDir(dir)
			if err != nil {
				return usageError{err}
			}
			if remove {
				if err := hook.Untrust(home, ws); err != nil {
					return err
				}
				fmt.Fprintf(env.stdout, "no longer trusted: %s\n", ws)
				return nil
			}
			real, err := hook.Trust(home, ws)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "trusted: %s\n", real)
			return nil
		},
	}
	cmd.Flags().BoolVar(&remove, "remove", false, "stop trusting the directory")
	return cmd
}
