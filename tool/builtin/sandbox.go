package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/agentloop/agentloop/internal/proc"
)

// ErrSandboxUnavailable is wrapped by the errors NewSandbox and
// Sandbox.Check return when commands cannot be sandboxed here.
var ErrSandboxUnavailable = errors.New("the shell sandbox is unavailable")

// Sandbox runs shell commands under bubblewrap (bwrap): the whole
// filesystem read-only, a private /tmp, fresh /dev and /proc, no network
// (not even the host's loopback), its own pid namespace, and only the
// workspace and the spill directory writable. It is Linux-only.
type Sandbox struct {
	// Bwrap is the path of the bwrap binary.
	Bwrap string
	// Writable are more directories bound read-write, besides the
	// workspace and the spill directory.
	Writable []string
	// Network keeps the host's network. Off by default: commands see only
	// their own loopback.
	Network bool
}

// NewSandbox finds bwrap and returns a sandbox that uses it. It fails,
// wrapping ErrSandboxUnavailable, on systems other than Linux and when
// bwrap is not installed; the message says how to install it.
func NewSandbox() (*Sandbox, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: it is Linux-only (it uses bubblewrap), and this is %s; run without the sandbox", ErrSandboxUnavailable, runtime.GOOS)
	}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (bwrap) is not installed; install it with `apt-get install bubblewrap` (Debian, Ubuntu) or your distribution's bubblewrap package", ErrSandboxUnavailable)
	}
	return &Sandbox{Bwrap: path}, nil
}

// Check runs a trivial command in the sandbox, to find out before the
// first real command whether bwrap can create its namespaces here (it
// cannot inside some containers, or where unprivileged user namespaces
// are disabled). The error carries bwrap's own explanation.
func (s *Sandbox) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dir := "/"
	args := s.Args(dir, nil, []string{"true"})
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	tag := proc.NewTag()
	proc.Prepare(cmd, tag)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		// The sandbox's pid 1 may outlive bwrap: collect it.
		proc.Reap(proc.Kill(proc.Target{Group: cmd.Process.Pid, Tag: tag}), 0, bashReapTimeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%w: bwrap could not start a sandbox here: %s (user namespaces may be disabled: check the sysctls kernel.unprivileged_userns_clone and user.max_user_namespaces, or the container's seccomp profile)", ErrSandboxUnavailable, msg)
	}
	return nil
}

// Args returns the command line that runs argv in the sandbox, in
// directory dir, with dir and writable bound read-write. The binds come
// after the private /tmp, so a workspace under /tmp stays visible.
func (s *Sandbox) Args(dir string, writable []string, argv []string) []string {
	bwrap := s.Bwrap
	if bwrap == "" {
		bwrap = "bwrap"
	}
	args := []string{bwrap,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
	}
	seen := map[string]bool{}
	for _, d := range append(append([]string{dir}, writable...), s.Writable...) {
		// Binding / or /tmp itself would undo the read-only root or the
		// private /tmp.
		if d == "" || d == "/" || d == "/tmp" || seen[d] {
			continue
		}
		seen[d] = true
		args = append(args, "--bind", d, d)
	}
	if !s.Network {
		args = append(args, "--unshare-net")
	}
	args = append(args,
		"--unshare-pid",
		"--die-with-parent",
		// A new session stops a command from pushing input into the
		// terminal agentloop runs in (TIOCSTI).
		"--new-session",
		"--chdir", dir,
		"--",
	)
	return append(args, argv...)
}

// sandboxDir returns the real path of dir, which bwrap needs for binds
// under symlinked directories.
func sandboxDir(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}
