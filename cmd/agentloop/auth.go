package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/llm"
)

func newAuthCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Show and reset the cooldowns of auth profiles and the learned context windows",
		Long: `A provider in the models file may carry several credentials:
  "profiles": [{"id": "work", "apiKey": "KEY_A"}, {"id": "spare", "apiKey": "KEY_B"}]
Runs try them in that order. A profile that fails (a dead key, an exhausted balance, a rate limit)
cools down for a while and the run moves to the next; the cooldowns are kept in
$AGENTLOOP_HOME/auth-state.json, so a restart and a second process respect them.

The same file keeps the context windows learned from servers: a server that runs a model with a
smaller window than it is declared with says so in its overflow error ("maximum context length is
15360 tokens"); runs then work to that window. auth status lists them, auth reset PROVIDER forgets
them with the provider's cooldowns.`,
	}
	var modelsFile string
	status := &cobra.Command{
		Use:   "status",
		Short: "List every auth profile and its cooldown",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			store, mf, err := openAuth(env, modelsFile)
			if err != nil {
				return err
			}
			st, err := store.Status(mf)
			if err != nil {
				return err
			}
			if len(st) == 0 {
				fmt.Fprintln(env.stdout, "no auth profiles: add \"profiles\" to a provider of the models file, or set the provider's key variable")
			} else if err := auth.WriteStatus(env.stdout, st, time.Now()); err != nil {
				return err
			}
			windows, err := store.LearnedWindows()
			if err != nil || len(windows) == 0 {
				return err
			}
			fmt.Fprintln(env.stdout, "\nContext windows learned from the servers' overflow errors (runs work to these instead of the declared ones; agentloop auth reset PROVIDER forgets them):")
			return auth.WriteWindows(env.stdout, windows)
		},
	}
	status.Flags().StringVar(&modelsFile, "models", "", "models file (default $AGENTLOOP_HOME/models.json)")
	reset := &cobra.Command{
		Use:   "reset provider [profile]",
		Short: "Clear the cooldowns of a provider's profiles, or of one profile",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			store, _, err := openAuth(env, modelsFile)
			if err != nil {
				return err
			}
			provider, id := args[0], ""
			if len(args) > 1 {
				id = args[1]
			}
			n, err := store.Clear(provider, id, len(args) == 1)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "cleared %d profile state(s)\n", n)
			if len(args) == 1 {
				w, err := store.ForgetWindows(provider, "")
				if err != nil {
					return err
				}
				if w > 0 {
					fmt.Fprintf(env.stdout, "forgot %d learned context window(s)\n", w)
				}
			}
			return nil
		},
	}
	reset.Flags().StringVar(&modelsFile, "models", "", "models file (default $AGENTLOOP_HOME/models.json)")
	cmd.AddCommand(status, reset)
	return cmd
}

func openAuth(env *cliEnv, modelsFile string) (*auth.Store, *llm.ModelsFile, error) {
	home, err := agentloopHome(env.getenv)
	if err != nil {
		return nil, nil, err
	}
	store, err := auth.Open(&auth.Config{Path: filepath.Join(home, "auth-state.json")})
	if err != nil {
		return nil, nil, err
	}
	path := modelsFile
	if path == "" {
		path = filepath.Join(home, "models.json")
	}
	mf, err := llm.LoadModelsFile(path)
	if err != nil {
		if modelsFile == "" && errors.Is(err, fs.ErrNotExist) {
			return store, nil, nil
		}
		return nil, nil, err
	}
	return store, mf, nil
}
