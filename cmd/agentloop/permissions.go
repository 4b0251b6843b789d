package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/tool"
)

// claudeHome is Claude Code's user directory, ~/.claude, whose
// settings.json agentloop reads beside its own ("" without a HOME).
func claudeHome(env *cliEnv) string {
	h := env.getenv("HOME")
	if h == "" {
		return ""
	}
	return filepath.Join(h, hook.ClaudeDir)
}

// homeAndWorkspace resolves the agentloop home and the workspace a
// command's --cwd names.
func homeAndWorkspace(env *cliEnv, cwd string) (home, ws string, err error) {
	if home, err = agentloopHome(env.getenv); err != nil {
		return "", "", err
	}
	if ws, err = workspaceDir(cwd); err != nil {
		return "", "", usageError{err}
	}
	return home, ws, nil
}

// builtinToolNames are the tools a run can have besides MCP ones.
var builtinToolNames = []string{"read", "write", "edit", "bash", "grep", "find", "ls"}

// verdictOf maps a settings list to its verdict.
func verdictOf(list hook.Permission) tool.Verdict {
	switch list {
	case hook.PermissionDeny:
		return tool.VerdictDeny
	case hook.PermissionAsk:
		return tool.VerdictAsk
	}
	return tool.VerdictAllow
}

// permissionRules reads the permission rules of every settings file of
// the user and the workspace cwd (Claude Code's included) that count
// here. A rule that does not parse is an error: a deny the user wrote
// must not silently vanish.
func permissionRules(env *cliEnv, home, cwd string, trust bool) (*tool.PermissionRules, error) {
	entries, err := hook.Permissions(hook.LoadOptions{Home: home, Workspace: cwd, ClaudeHome: claudeHome(env), Trust: trust})
	if err != nil {
		return nil, err
	}
	rs := &tool.PermissionRules{Workspace: cwd, Home: env.getenv("HOME")}
	for _, e := range entries {
		if !e.Active {
			continue
		}
		r, err := tool.ParsePermissionRule(verdictOf(e.List), e.Rule, e.Source)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Source, err)
		}
		rs.Rules = append(rs.Rules, r)
	}
	if len(rs.Rules) == 0 {
		return nil, nil
	}
	return rs, nil
}

func newPermissionsCmd(env *cliEnv) *cobra.Command {
	var cwd string
	var trust bool
	cmd := &cobra.Command{
		Use:   "permissions",
		Short: "Show the permission rules that decide tool approvals here, and where each comes from",
		Long: `Show the "permissions" rules (allow, ask, deny, in Claude Code's syntax) of every settings file
read for this workspace: $AGENTLOOP_HOME/settings.json and ~/.claude/settings.json (user),
<workspace>/.agentloop/settings.json, .claude/settings.json and .claude/settings.local.json
(project: only in a trusted workspace, see "agentloop trust").

Deny rules are looked at first, then ask, then allow; the first match decides a call, before
--approve's default: Bash(git diff:*), Bash(npm run test), Read(./secrets/**), Edit, Write,
mcp__server, mcp__server__tool.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			home, ws, err := homeAndWorkspace(env, cwd)
			if err != nil {
				return err
			}
			entries, err := hook.Permissions(hook.LoadOptions{Home: home, Workspace: ws, ClaudeHome: claudeHome(env), Trust: trust})
			if err != nil {
				return err
			}
			if len(entries) == 0 {
				fmt.Fprintln(env.stdout, "no permission rules: --approve decides every call (auto: run what the tool policy offers)")
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LIST\tRULE\tAPPLIES TO\tSOURCE\tSTATUS")
			for _, e := range entries {
				status := "active"
				applies := ""
				r, perr := tool.ParsePermissionRule(verdictOf(e.List), e.Rule, e.Source)
				switch {
				case perr != nil:
					status = "error: " + perr.Error()
				case strings.HasPrefix(e.Rule, "mcp__"):
					applies = "MCP tools"
				default:
					names, why := r.Tools(builtinToolNames)
					applies = strings.Join(names, ",")
					if why != "" {
						applies, status = "-", "no effect: "+why
					}
				}
				if !e.Active {
					status = "inactive: " + e.Inactive
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.List, e.Rule, applies, e.Source, status)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(env.stdout, "\nDeny wins over ask and allow; a call no active rule matches is left to --approve.")
			return nil
		},
	}
	cmd.Flags().StringVar(&cwd, "cwd", "", "workspace (default: the current directory)")
	cmd.Flags().BoolVar(&trust, "trust", false, "show the workspace as trusted")
	return cmd
}
