package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentloop/agentloop/session"
)

// sessionFlags locate the session store.
type sessionFlags struct {
	dir string
	pg  string // --store postgres://…
}

func (f *sessionFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "session-dir", "", "session store (default $AGENTLOOP_HOME/sessions)")
}

// addStore adds --store, for the commands that read sessions from any
// store.
func (f *sessionFlags) addStore(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.pg, "store", "", "read the sessions kept in PostgreSQL at this postgres:// URL (agentloop serve --store)")
}

// anyStore is the store the flags name, and what closes it.
func (f *sessionFlags) anyStore(ctx context.Context, env *cliEnv) (session.Store, func(), error) {
	if f.pg != "" {
		st, _, closeStore, err := openPostgresStore(ctx, f.pg, 0, 0)
		return st, closeStore, err
	}
	st, err := f.store(env)
	return st, func() {}, err
}

func (f *sessionFlags) store(env *cliEnv) (*session.JSONLStore, error) {
	dir := f.dir
	if dir == "" {
		home, err := agentloopHome(env.getenv)
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(home, "sessions")
	}
	return session.NewJSONLStore(dir), nil
}

// loadTranscript reads a session given by id (or id prefix) or by path.
func (f *sessionFlags) loadTranscript(ctx context.Context, env *cliEnv, ref string) (*session.Transcript, string, error) {
	if f.pg != "" {
		st, closeStore, err := f.anyStore(ctx, env)
		if err != nil {
			return nil, "", err
		}
		defer closeStore()
		t, err := st.Load(ctx, ref)
		if err != nil {
			return nil, "", sessionLookupError(ref, err)
		}
		return t, "postgres:" + t.Header.ID, nil
	}
	if strings.HasSuffix(ref, ".jsonl") || strings.ContainsRune(ref, os.PathSeparator) {
		t, err := session.LoadFile(ref)
		return t, ref, err
	}
	st, err := f.store(env)
	if err != nil {
		return nil, "", err
	}
	path, err := st.Resolve(ref)
	if err != nil {
		return nil, "", sessionLookupError(ref, err)
	}
	t, err := session.LoadFile(path)
	return t, path, err
}

func sessionLookupError(ref string, err error) error {
	if errors.Is(err, session.ErrNotFound) {
		return usageError{fmt.Errorf("no session %q: see \"agentloop sessions list --all\"", ref)}
	}
	return err
}

func newSessionsCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, show, export, repair and delete stored sessions",
		Long: `Every run is stored as a session: a JSONL transcript under $AGENTLOOP_HOME/sessions/<cwd>/.
Resume one with "agentloop run --continue" (the latest for this directory) or "--session ID",
or start a branch of it with "--fork ID".`,
	}
	cmd.AddCommand(newSessionsListCmd(env), newSessionsShowCmd(env), newSessionsExportCmd(env), newSessionsRepairCmd(env), newSessionsUnbindCmd(env), newSessionsDeleteCmd(env))
	return cmd
}

func newSessionsListCmd(env *cliEnv) *cobra.Command {
	var sf sessionFlags
	var all bool
	var cwd string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the sessions of this directory (or --all), the most recent first",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, closeStore, err := sf.anyStore(c.Context(), env)
			if err != nil {
				return err
			}
			defer closeStore()
			dir := ""
			if !all {
				if dir, err = workspaceDir(cwd); err != nil {
					return usageError{err}
				}
			}
			infos, err := st.List(c.Context(), dir)
			if err != nil {
				return err
			}
			if len(infos) == 0 {
				if all {
					fmt.Fprintln(env.stdout, "no sessions yet")
				} else {
					fmt.Fprintf(env.stdout, "no sessions for %s (try --all)\n", dir)
				}
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUPDATED\tMESSAGES\tTOKENS\tCOST\tCWD\tTITLE")
			for _, in := range infos {
				if in.Err != nil {
					fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\tunreadable: %v\n", in.ID, in.Cwd, in.Err)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t$%.4f\t%s\t%s\n", in.ID, ago(in.Updated), in.Messages,
					count(in.Tokens), in.Cost, in.Cwd, oneLine(in.Title, 40))
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	sf.addStore(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "sessions of every directory")
	cmd.Flags().StringVar(&cwd, "cwd", "", "directory whose sessions to list (default: the current one)")
	return cmd
}

func newSessionsShowCmd(env *cliEnv) *cobra.Command {
	var sf sessionFlags
	var opts session.RenderOptions
	cmd := &cobra.Command{
		Use:   "show ID|PATH",
		Short: "Render a session's conversation for the terminal",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			t, _, err := sf.loadTranscript(c.Context(), env, args[0])
			if err != nil {
				return err
			}
			for _, w := range t.Warnings {
				fmt.Fprintln(env.stderr, "agentloop: warning:", w)
			}
			if f, ok := env.stdout.(*os.File); ok && isTerminal(f) {
				opts.Color = true
			}
			return session.Render(env.stdout, t, opts)
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&opts.Thinking, "thinking", false, "show thinking blocks")
	cmd.Flags().IntVar(&opts.MaxResultLines, "result-lines", 0, "lines shown of each tool result (0: 12, -1: all)")
	cmd.Flags().StringVar(&opts.Leaf, "leaf", "", "render the branch ending at this entry id")
	return cmd
}

func newSessionsExportCmd(env *cliEnv) *cobra.Command {
	var sf sessionFlags
	var format, output, leaf string
	cmd := &cobra.Command{
		Use:   "export ID|PATH",
		Short: "Export a session as Markdown or JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			t, _, err := sf.loadTranscript(c.Context(), env, args[0])
			if err != nil {
				return err
			}
			var w io.Writer = env.stdout
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			switch format {
			case "md", "markdown":
				err = session.ExportMarkdown(w, t, leaf)
			case "json":
				err = session.ExportJSON(w, t, leaf)
			case "jsonl":
				if leaf != "" {
					return usageError{errors.New("--format jsonl writes the whole session, every branch: drop --leaf")}
				}
				err = session.WriteJSONL(w, t)
			default:
				return usageError{fmt.Errorf("--format %q: use md, json or jsonl", format)}
			}
			return err
		},
	}
	sf.add(cmd)
	sf.addStore(cmd)
	cmd.Flags().StringVar(&format, "format", "md", "md, json, or jsonl (the transcript's lines, as the session file holds them)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&leaf, "leaf", "", "export the branch ending at this entry id")
	return cmd
}

func newSessionsRepairCmd(env *cliEnv) *cobra.Command {
	var sf sessionFlags
	cmd := &cobra.Command{
		Use:   "repair ID|PATH",
		Short: "Make a damaged session file whole again, after a backup",
		Long: `A session file whose middle holds a line that is not a valid entry (disk trouble, a hand edit)
refuses to load, naming the file and the line; one whose entries repeat an id or name themselves
(or a later entry) as parent loads with a warning. repair copies the file to a backup beside it,
drops the corrupt lines, re-links the entries that followed them or broke the tree, renames
repeated ids, and gives every tool call left without a result (a run killed by a second Ctrl-C,
say) an error result, which providers need to accept the history. It takes the session's lock,
so it never runs while a run is writing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ref := args[0]
			var rep *session.FileRepair
			var err error
			if strings.HasSuffix(ref, ".jsonl") || strings.ContainsRune(ref, os.PathSeparator) {
				rep, err = session.RepairFile(ref)
			} else {
				st, serr := sf.store(env)
				if serr != nil {
					return serr
				}
				rep, err = st.Repair(c.Context(), ref, nil)
				if err != nil && errors.Is(err, session.ErrNotFound) {
					return sessionLookupError(ref, err)
				}
			}
			if err != nil {
				return err
			}
			if !rep.Changed() {
				fmt.Fprintln(env.stdout, "nothing to repair: every line is a valid entry, the entries form a tree and every tool call has a result")
				return nil
			}
			var did []string
			if len(rep.DroppedLines) > 0 {
				did = append(did, fmt.Sprintf("dropped lines %v", rep.DroppedLines))
			}
			if rep.Reparented > 0 {
				did = append(did, fmt.Sprintf("%d entries re-linked", rep.Reparented))
			}
			if len(rep.Renamed) > 0 {
				did = append(did, fmt.Sprintf("%d entries with a repeated id renamed (%s)", len(rep.Renamed), strings.Join(rep.Renamed, ", ")))
			}
			if len(rep.AddedResults) > 0 {
				did = append(did, fmt.Sprintf("%d tool calls without a result given an error result (%s)", len(rep.AddedResults), strings.Join(rep.AddedResults, ", ")))
			}
			fmt.Fprintf(env.stdout, "%s; the original is at %s\n", strings.Join(did, "; "), rep.Backup)
			return nil
		},
	}
	sf.add(cmd)
	return cmd
}

func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Format("2006-01-02")
}
