package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/internal/proc"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

const (
	// BashDefaultTimeout is how long a command may run when the model
	// does not say.
	BashDefaultTimeout = 120 * time.Second
	// BashMaxTimeout is the longest a command may run, whatever the model
	// asks for.
	BashMaxTimeout = 600 * time.Second

	// bashDrainTimeout bounds the wait for the output pipe to close after
	// the shell and its tree are gone: a process that escaped the sweep
	// (it cleared its environment and left the process group) may still
	// hold it.
	bashDrainTimeout = 2 * time.Second
	// bashReapTimeout bounds the wait for killed processes to be reaped.
	bashReapTimeout = 5 * time.Second
	// bashUpdateInterval spaces progress updates of a chatty command.
	bashUpdateInterval = 50 * time.Millisecond
)

// BashOptions configures the bash tool. The zero value runs commands in
// the current directory, unsandboxed, with agentloop's environment.
type BashOptions struct {
	// Dir is the workspace: commands start there. Empty means the current
	// directory.
	Dir string
	// SpillDir is the session's data directory, where the full output of
	// a command too long to show goes. Empty means the system's temporary
	// directory. The read tool should be allowed to read it.
	SpillDir string
	// Sandbox, when not nil, runs every command under bubblewrap (see
	// Sandbox): read-only filesystem except Dir and SpillDir, private
	// /tmp, no network.
	Sandbox *Sandbox
	// Env is the environment of commands, as in exec.Cmd: nil means
	// agentloop's own. Either way, provider keys and other secrets
	// (proc.DefaultSecretVars: *_API_KEY, *_TOKEN, AWS credentials, ...),
	// the variables named in EnvDeny and those holding a value of Secrets
	// are removed, as are BASH_ENV, ENV and exported functions, which
	// would run code before the command; EnvAllow keeps variables anyway.
	Env []string
	// EnvDeny and EnvAllow are names or patterns (* matches any run of
	// characters) of variables to remove, and to keep even when a default
	// or EnvDeny names them.
	EnvDeny, EnvAllow []string
	// Secrets are values no variable of a command may hold: the run's API
	// keys, whatever variable they came from.
	Secrets []string
	// Shell is the shell run with -c. Empty means /bin/bash, else bash on
	// PATH, else sh.
	Shell string
	// DefaultTimeout and MaxTimeout override BashDefaultTimeout and
	// BashMaxTimeout when positive.
	DefaultTimeout, MaxTimeout time.Duration
	// KeepBackground lets background processes that a command leaves
	// running (a dev server started with &) outlive the call; Close ends
	// them. By default they are killed when the command exits. A timeout
	// or an abort kills them either way.
	KeepBackground bool
}

// Bash is the bash tool: it runs a shell command in the workspace and
// returns its merged stdout and stderr. Each command runs in its own
// process group, tagged, under a subreaper (see internal/proc): when it
// ends, times out or is aborted, every process it started is killed and
// reaped, including background jobs and descendants that called setsid.
// A non-zero exit is an error result that carries the exit code.
type Bash struct {
	opts  BashOptions
	shell string

	mu       sync.Mutex
	kept     []proc.Target // commands whose background processes were kept
	spillDir string        // SpillDir, or what SetSpillDir set
}

// SetSpillDir moves where later commands spill long output, as when the
// session (and the directory beside its transcript) becomes known after
// the tool was built. The read tool's workspace should be allowed to read
// dir (Workspace.AddReadable).
func (b *Bash) SetSpillDir(dir string) {
	b.mu.Lock()
	b.spillDir = dir
	b.mu.Unlock()
}

func (b *Bash) spill() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spillDir
}

// NewBash returns the bash tool. On Linux it makes the agentloop process
// a child subreaper (once, process-wide) so that no descendant of a
// command can escape its sweep by being reparented to init.
func NewBash(opts BashOptions) *Bash {
	_ = proc.EnableSubreaper() // without it the sweep still finds tagged processes under the shell
	b := &Bash{opts: opts, shell: opts.Shell, spillDir: opts.SpillDir}
	if b.shell == "" {
		b.shell = bashFindShell()
	}
	if b.opts.DefaultTimeout <= 0 {
		b.opts.DefaultTimeout = BashDefaultTimeout
	}
	if b.opts.MaxTimeout <= 0 {
		b.opts.MaxTimeout = BashMaxTimeout
	}
	return b
}

func bashFindShell() string {
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "sh"
}

// Name returns "bash".
func (*Bash) Name() string { return "bash" }

// Description tells the model what the tool does.
func (b *Bash) Description() string {
	d := fmt.Sprintf("Run a shell command with bash -c in the workspace directory and return its combined stdout and stderr. "+
		"Output longer than %d lines or %d KB is cut to its last part; the notice at the end gives the path of a file with the full output. "+
		"A non-zero exit status is reported as an error with the exit code. "+
		"The command is killed, with every process it started, when it times out (default %d seconds, at most %d; set timeout in seconds for long builds or tests) or when the call is cancelled. "+
		"Stdin is empty: do not run interactive programs.",
		BashMaxLines, BashMaxBytes/1024, int(b.opts.DefaultTimeout/time.Second), int(b.opts.MaxTimeout/time.Second))
	if b.opts.KeepBackground {
		d += " Background processes (cmd &) keep running after the call until the session ends; redirect their output to a file (cmd > log 2>&1 &), or the call waits a moment for them."
	} else {
		d += " Background processes do not outlive the call."
	}
	if b.opts.Sandbox != nil {
		d += " Commands run in a sandbox: only the workspace is writable, /tmp is private and there is no network."
	}
	return d
}

var bashSchema = schemaOf[bashArgs](nil)

// Schema is the JSON schema of the arguments: command (required) and
// timeout in seconds.
func (*Bash) Schema() json.RawMessage { return bashSchema() }

// ConcurrencySafe reports whether the call's command is read-only by
// IsReadOnlyCommand; other commands run alone.
func (*Bash) ConcurrencySafe(call tool.Call) bool { return bashCallReadOnly(call) }

// ReadOnly is false: the bash tool as a whole can change anything. Whether
// one call is read-only is ReadOnlyCall.
func (*Bash) ReadOnly() bool { return false }

// ReadOnlyCall reports whether the call's command is read-only by
// IsReadOnlyCommand.
func (*Bash) ReadOnlyCall(call tool.Call) bool { return bashCallReadOnly(call) }

func bashCallReadOnly(call tool.Call) bool {
	var a bashArgs
	if json.Unmarshal(call.Args, &a) != nil {
		return false
	}
	return IsReadOnlyCommand(a.Command)
}

type bashArgs struct {
	Command string   `json:"command" jsonschema:"The shell command to run."`
	Timeout *float64 `json:"timeout,omitempty" jsonschema:"Timeout in seconds (optional)."`
}

// BashDetails is the metadata of a bash result (its Details field).
type BashDetails struct {
	// ExitCode is the shell's exit status; -1 when it was killed by a
	// signal or never finished.
	ExitCode   int   `json:"exitCode"`
	DurationMs int64 `json:"durationMs"`
	TimedOut   bool  `json:"timedOut,omitempty"`
	Aborted    bool  `json:"aborted,omitempty"`
	// Signal names the signal that killed the shell, if one did.
	Signal string `json:"signal,omitempty"`
	// Truncated is set when the model saw only the end of the output;
	// FullOutputPath is then the file with all of it.
	Truncated      bool   `json:"truncated,omitempty"`
	FullOutputPath string `json:"fullOutputPath,omitempty"`
	TotalBytes     int64  `json:"totalBytes"`
	TotalLines     int64  `json:"totalLines"`
	Sandboxed      bool   `json:"sandboxed,omitempty"`
	// Killed is the number of processes ended when the command finished,
	// timed out or was aborted.
	Killed int `json:"killed,omitempty"`
}

func (b *Bash) timeout(seconds *float64) time.Duration {
	if seconds == nil || *seconds <= 0 {
		return b.opts.DefaultTimeout
	}
	d := time.Duration(*seconds * float64(time.Second))
	if d > b.opts.MaxTimeout || d < 0 { // d < 0: overflow
		return b.opts.MaxTimeout
	}
	return d
}

// Execute runs the command. Output is streamed to update as it comes. A
// cancelled ctx kills the command and returns the output so far with
// ctx's error.
func (b *Bash) Execute(ctx context.Context, call tool.Call, update func(tool.Partial)) (tool.Result, error) {
	var a bashArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return tool.Result{}, fmt.Errorf("bash: the arguments are not valid: %v", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return tool.Result{}, errors.New("bash: command is empty; pass the shell command to run")
	}
	timeout := b.timeout(a.Timeout)
	dir, err := b.dir()
	if err != nil {
		return tool.Result{}, err
	}

	argv := []string{b.shell, "-c", a.Command}
	spillDir := b.spill()
	if b.opts.Sandbox != nil {
		var writable []string
		if spillDir != "" {
			if err := os.MkdirAll(spillDir, 0o700); err != nil {
				return tool.Result{}, fmt.Errorf("bash: create the spill directory %s: %w", spillDir, err)
			}
			writable = append(writable, sandboxDir(spillDir))
		}
		dir = sandboxDir(dir)
		argv = b.opts.Sandbox.Args(dir, writable, argv)
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The command's whole tree is proc's: its own group and tag, killed
	// with every process it started at the timeout or on abort.
	c := proc.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd := c.Cmd
	cmd.Dir = dir
	cmd.Env = b.env()
	pr, pw, err := os.Pipe()
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: create the output pipe: %w", err)
	}
	// An *os.File goes to the shell as is: Wait then returns when the
	// shell exits, not when the last holder of the pipe closes it.
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.WaitDelay = bashDrainTimeout

	started := time.Now()
	if err := c.Start(); err != nil {
		pw.Close()
		pr.Close()
		if b.opts.Sandbox != nil {
			return tool.Result{}, fmt.Errorf("bash: start the sandbox (%s): %w", argv[0], err)
		}
		return tool.Result{}, fmt.Errorf("bash: start %s: %w", b.shell, err)
	}
	pw.Close()
	pid := cmd.Process.Pid

	out := &bashOutput{spillDir: spillDir, spillName: "bash-" + bashFileSafe(call.ID)}
	upd := &bashUpdater{out: out, update: update}
	readDone := make(chan struct{})
	go bashPump(pr, out, upd, readDone)

	waitErr := cmd.Wait()
	elapsed := time.Since(started)

	// The shell is gone: end whatever it left behind (unless it may stay
	// until Close), then collect it.
	keep := b.opts.KeepBackground && ctx.Err() == nil && runCtx.Err() == nil
	if c.Sweep(keep, bashReapTimeout) {
		b.mu.Lock()
		b.kept = append(b.kept, c.Rest())
		b.mu.Unlock()
	}
	all := c.Killed()

	drain := time.NewTimer(bashDrainTimeout)
	select {
	case <-readDone:
	case <-drain.C:
		pr.Close() // unblocks the reader
		<-readDone
	}
	drain.Stop()
	pr.Close()
	upd.close() // no update after Execute returns

	view, spillPath, spillErr := out.finish()
	d := BashDetails{
		ExitCode:       -1,
		DurationMs:     elapsed.Milliseconds(),
		Truncated:      view.Truncated,
		FullOutputPath: spillPath,
		TotalBytes:     view.TotalBytes,
		TotalLines:     view.TotalLines,
		Sandboxed:      b.opts.Sandbox != nil,
		Killed:         bashCountOthers(all, pid),
	}
	if cmd.ProcessState != nil {
		d.ExitCode = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			d.Signal = ws.Signal().String()
		}
	}

	text := view.Text
	if text == "" {
		text = "(no output)"
	}
	if n := view.notice(spillPath, spillErr); n != "" {
		text += "\n\n" + n
	}
	res := tool.Result{}
	switch {
	case ctx.Err() != nil:
		d.Aborted = true
		text += "\n\nCommand aborted."
		res.IsError = true
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		d.TimedOut = true
		text += fmt.Sprintf("\n\nCommand timed out after %s seconds and was killed with every process it started.", bashSeconds(timeout))
		res.IsError = true
	case d.Signal != "":
		text += fmt.Sprintf("\n\nCommand was killed by signal %s.", d.Signal)
		res.IsError = true
	case d.ExitCode != 0:
		text += fmt.Sprintf("\n\nCommand exited with code %d.", d.ExitCode)
		res.IsError = true
	case waitErr != nil:
		text += "\n\nCommand failed: " + waitErr.Error()
		res.IsError = true
	}
	res.Content = []llm.Content{llm.Text(text)}
	res.Details, _ = llm.MarshalJSON(d)
	if d.Aborted {
		return res, ctx.Err()
	}
	return res, nil
}

// Close ends the background processes kept by KeepBackground. Calls may
// still be made afterwards. It is a no-op without KeepBackground.
func (b *Bash) Close() error {
	b.mu.Lock()
	kept := b.kept
	b.kept = nil
	b.mu.Unlock()
	var killed []proc.Proc
	for _, t := range kept {
		killed = append(killed, proc.Kill(t)...)
	}
	proc.Reap(killed, 0, bashReapTimeout)
	return nil
}

// bashPump copies the command's output into out and reports progress.
func bashPump(r *os.File, out *bashOutput, upd *bashUpdater, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			out.Write(buf[:n])
			upd.chunk()
		}
		if err != nil {
			return
		}
	}
}

// bashUpdater sends the visible output as progress, at most once per
// bashUpdateInterval; output that arrives within the interval is sent
// when it ends, so a command that goes quiet still shows its latest
// lines.
type bashUpdater struct {
	out    *bashOutput
	update func(tool.Partial)

	mu     sync.Mutex
	last   time.Time
	timer  *time.Timer
	closed bool
}

func (u *bashUpdater) chunk() {
	if u.update == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed || u.timer != nil {
		return
	}
	if wait := bashUpdateInterval - time.Since(u.last); wait > 0 {
		u.timer = time.AfterFunc(wait, u.flush)
		return
	}
	u.sendLocked()
}

func (u *bashUpdater) flush() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.timer = nil
	if !u.closed {
		u.sendLocked()
	}
}

func (u *bashUpdater) sendLocked() {
	u.last = time.Now()
	v := u.out.view()
	u.update(tool.Partial{Content: []llm.Content{llm.Text(v.Text)}})
}

// close stops updates; a flush that is already waiting for the lock finds
// the updater closed.
func (u *bashUpdater) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	if u.timer != nil {
		u.timer.Stop()
		u.timer = nil
	}
}

// env is the environment of a command: Env (or agentloop's) without
// secrets and shell start-up variables.
func (b *Bash) env() []string {
	p := proc.EnvPolicy{Deny: b.opts.EnvDeny, Allow: b.opts.EnvAllow, Secrets: b.opts.Secrets}
	return p.Filter(b.opts.Env, proc.ShellStartupVars...)
}

func (b *Bash) dir() (string, error) {
	dir := b.opts.Dir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("bash: working directory %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("bash: the working directory %s does not exist or cannot be read: %w", abs, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("bash: the working directory %s is not a directory", abs)
	}
	return abs, nil
}

func bashCountOthers(ps []proc.Proc, except int) int {
	seen := map[proc.Proc]bool{}
	for _, p := range ps {
		if p.Pid != except {
			seen[p] = true
		}
	}
	return len(seen)
}

func bashSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// bashFileSafe keeps the letters, digits, - and _ of a call id, for a file
// name.
func bashFileSafe(id string) string {
	var sb strings.Builder
	for _, r := range id {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			sb.WriteRune(r)
		}
		if sb.Len() >= 40 {
			break
		}
	}
	if sb.Len() == 0 {
		return "call"
	}
	return sb.String()
}
