package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// printModeArgs makes `agentloop -p "prompt"` (and --print), as claude -p
// users type it, the `agentloop run "prompt"` it means: a -p or --print
// before any subcommand name turns the command line into a run.
func printModeArgs(root *cobra.Command, args []string) []string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") && i == 0 {
			if c, _, err := root.Find([]string{a}); err == nil && c != root {
				return args // a subcommand
			}
		}
		if a == "-p" || a == "--print" {
			return append([]string{"run"}, append(args[:i:i], args[i+1:]...)...)
		}
	}
	return args
}

// chatArgs makes `agentloop -c` (and any other flags without a
// subcommand, as claude users type them) the `agentloop chat -c` it means.
// Help, version and print mode stay as they are.
func chatArgs(root *cobra.Command, args []string) []string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") || args[0] == "--" {
		return args
	}
	for _, a := range args {
		switch a {
		case "-h", "--help", "-v", "--version":
			return args
		}
	}
	if c, _, err := root.Find(args); err == nil && c != root {
		return args // flags before a subcommand's name
	}
	return append([]string{"chat"}, args...)
}

// barePromptHint is the hint for `agentloop "what is here"`: the chat is
// agentloop alone (or agentloop chat), and print mode is -p (or run).
func barePromptHint(root *cobra.Command, args []string) string {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return ""
	}
	if c, _, err := root.Find(args[:1]); err == nil && c != root {
		return ""
	}
	if !strings.ContainsAny(args[0], " \t\n?") && len(args) == 1 {
		return "" // more likely a mistyped command: cobra's suggestion says so
	}
	return fmt.Sprintf("to run a prompt, use print mode: agentloop -p %q (or agentloop run %q); agentloop alone opens the chat", strings.Join(args, " "), strings.Join(args, " "))
}

// version is the module version the binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
