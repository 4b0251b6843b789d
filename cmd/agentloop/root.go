package main

import (
	"strings"

	"github.com/spf13/cobra"
)

func newRootCmd(env *cliEnv) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentloop",
		Short: "An agent runtime: run LLM agents with tools, sessions and recovery",
		Long: `agentloop runs LLM agents: it streams the model's reply, runs the tools it asks for,
feeds the results back until the work is done, and keeps the transcript.

On a terminal, agentloop alone opens the chat (agentloop chat). Try it offline on the scripted
model:
  agentloop run --model faux/demo "what is in this folder?"`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err: flagErr{flagHint(c, err)}}
	})
	chat := newChatCmd(env)
	// agentloop alone, on a terminal, is the chat on its default flags;
	// without one it prints this help, as it always has.
	root.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 || !chatTerminal(env) {
			return c.Help()
		}
		chat.SetContext(c.Context())
		return chat.RunE(chat, nil)
	}
	root.AddCommand(
		chat,
		newRunCmd(env),
		newACPCmd(env),
		newHooksCmd(env),
		newTrustCmd(env),
		newSessionsCmd(env),
		newMCPCmd(env),
		newAuthCmd(env),
		newCompactCmd(env),
		newPermissionsCmd(env),
		newServeCmd(env),
		newMCPBridgeCmd(env),
	)
	return root
}

type flagErr struct{ error }

func isFlagError(err error) bool {
	if _, ok := err.(flagErr); ok {
		return true
	}
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") ||
		strings.HasPrefix(s, "unknown shorthand flag") || strings.Contains(s, "accepts ") && strings.Contains(s, " arg(s)")
}
