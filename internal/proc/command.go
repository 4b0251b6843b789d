package proc

import (
	"context"
	"os/exec"
	"sync"
	"time"
)

// Command is one child process tree that proc owns from start to reap:
// the command runs in its own process group and carries a fresh tag, an
// ended context kills the whole tree (setsid escapees included), and
// Sweep ends and collects whatever it left behind. It is the one way
// agentloop runs a subprocess: the bash tool, its sandbox check, command
// hooks, MCP stdio servers and "!command" keys.
//
// Set up Cmd (Dir, Env, pipes, WaitDelay) before Start; do not replace
// its Cancel.
type Command struct {
	Cmd *exec.Cmd

	tag  string
	born uint64 // Now() before the start: what is adopted from then on is the command's

	mu     sync.Mutex
	killed []Proc
}

// CommandContext returns a Command for name and args. When ctx ends, the
// root and every process of its tree are stopped and killed (what
// exec.CommandContext would do to the root alone). A nil ctx gives a
// command that only Sweep ends.
func CommandContext(ctx context.Context, name string, args ...string) *Command {
	_ = EnableSubreaper() // without it the sweep still finds the group and the tagged processes under us
	c := &Command{tag: NewTag()}
	if ctx == nil {
		c.Cmd = exec.Command(name, args...)
		return c
	}
	c.Cmd = exec.CommandContext(ctx, name, args...)
	c.Cmd.Cancel = func() error {
		pid := c.Cmd.Process.Pid
		k := Kill(Target{Root: pid, Group: pid, Tag: c.tag, AdoptedSince: c.born})
		c.mu.Lock()
		c.killed = append(c.killed, k...)
		c.mu.Unlock()
		return nil
	}
	return c
}

// Adopt prepares cmd, which someone else may start (an MCP transport
// does), to be owned by proc: its own process group and a fresh tag in
// its environment, so set cmd.Env before.
// Started elsewhere, it has no start stamp, so its Sweep leaves the
// untagged processes this process adopted alone.
//
// It makes this process a child subreaper (EnableSubreaper), so that
// what escapes with setsid is still found under it.
func Adopt(cmd *exec.Cmd) *Command {
	_ = EnableSubreaper() // without it the sweep still finds the group and the tagged processes under us
	c := &Command{Cmd: cmd, tag: NewTag()}
	Prepare(cmd, c.tag)
	return c
}

// Start starts the command, in its own process group and with its tag
// added to Cmd.Env (nil meaning this process's environment).
func (c *Command) Start() error {
	Prepare(c.Cmd, c.tag)
	c.born = Now()
	return c.Cmd.Start()
}

// Run starts the command, waits for it and sweeps what it left behind,
// collecting for at most timeout.
func (c *Command) Run(timeout time.Duration) error {
	if err := c.Start(); err != nil {
		return err
	}
	err := c.Cmd.Wait()
	c.Sweep(false, timeout)
	return err
}

// Rest names what the command leaves behind once its root is gone.
func (c *Command) Rest() Target {
	t := Target{Tag: c.tag, AdoptedSince: c.born}
	if c.Cmd.Process != nil {
		t.Group = c.Cmd.Process.Pid
	}
	return t
}

// Sweep ends what the command left behind, unless keep is set and
// something still runs (then it reports true, and Rest names what was
// kept, for a later Kill), and collects for at most timeout what was
// killed, including by an ended context, and the orphans that other
// children left to this process. Call it once the root was waited for.
func (c *Command) Sweep(keep bool, timeout time.Duration) (kept bool) {
	var leftovers []Proc
	if keep {
		kept = len(Find(c.Rest())) > 0
	} else {
		leftovers = Kill(c.Rest())
	}
	root := 0
	if c.Cmd.Process != nil {
		root = c.Cmd.Process.Pid
	}
	c.mu.Lock()
	c.killed = append(c.killed, leftovers...)
	all := c.killed
	c.mu.Unlock()
	Reap(all, root, timeout)
	// As the subreaper, this process also inherits the orphans of other
	// children (hooks, MCP servers): collect those that died meanwhile.
	ReapOrphans()
	return kept
}

// Killed returns the processes killed so far, the root included when an
// ended context killed it.
func (c *Command) Killed() []Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Proc(nil), c.killed...)
}

// Tag returns the command's tag (TagEnv), for tests and diagnostics.
func (c *Command) Tag() string { return c.tag }
