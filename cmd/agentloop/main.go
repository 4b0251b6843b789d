// Command agentloop runs LLM agents from the shell: `agentloop run "prompt"`
// streams one agent run (model calls, tool calls, results) on a scripted
// model offline or on a real provider, and the other subcommands inspect
// what runs leave behind.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/internal/proc"
)

// endAllTimeout bounds the wait for killed children to be collected at exit.
const endAllTimeout = 2 * time.Second

func main() {
	os.Exit(mainExit())
}

func mainExit() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first Ctrl-C (or SIGTERM) aborts the run cleanly: tools are
	// stopped, the transcript is written. A second one exits at once, and
	// takes every process the run started with it (a hook that ignores
	// SIGTERM, a tool still running), so nothing outlives agentloop.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	interrupted := make(chan struct{})
	go func() {
		<-sigs
		close(interrupted)
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "agentloop: interrupted twice, exiting now")
		proc.EndAll(endAllTimeout)
		os.Exit(exitInterrupted)
	}()
	env := &cliEnv{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		getenv: os.Getenv, lookupEnv: os.LookupEnv, stdinIsPipe: !isTerminal(os.Stdin), stdinIsTerminal: isTerminal(os.Stdin),
	}
	code := execute(ctx, env, os.Args[1:])
	// Whatever a tool or hook left running (a daemon that escaped its
	// command's sweep) ends with the process.
	proc.EndAll(endAllTimeout)
	select {
	case <-interrupted:
		return exitInterrupted
	default:
	}
	return code
}

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// cliEnv is what a command may touch of the process, so tests can run
// commands in-process.
type cliEnv struct {
	stdin           io.Reader
	stdout, stderr  io.Writer
	getenv          func(string) string
	lookupEnv       func(string) (string, bool)
	stdinIsPipe     bool
	stdinIsTerminal bool
}

// execute runs the command line and returns the exit code.
func execute(ctx context.Context, env *cliEnv, args []string) int {
	root := newRootCmd(env)
	args = printModeArgs(root, args)
	args = chatArgs(root, args)
	root.SetArgs(args)
	root.SetIn(env.stdin)
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(env.stderr, "agentloop:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(env.stderr, "agentloop:", err)
	if hint := barePromptHint(root, args); hint != "" {
		fmt.Fprintln(env.stderr, "agentloop:", hint)
	}
	var ue usageError
	if errors.As(err, &ue) || isFlagError(err) {
		return exitUsage
	}
	if ctx.Err() != nil {
		return exitInterrupted
	}
	return exitFailed
}

// exitError ends a command with a chosen exit code and an optional message.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return fmt.Sprintf("exit %d: %s", e.code, e.msg) }

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
