package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/internal/proc"
)

// ErrSandboxUnavailable is wrapped by the errors NewSandbox and
// Sandbox.Check return when commands cannot be sandboxed here.
var ErrSandboxUnavailable = errors.New("the shell sandbox is unavailable")

// Sandbox runs shell commands under bubblewrap (bwrap): the whole
// filesystem read-only, private /tmp, /var/tmp and /run (where the host's
// Unix sockets live), fresh /dev and /proc, no network (not even the
// host's loopback or its abstract sockets), and only the workspace and the
// spill directory writable. The command runs as the unprivileged user
// nobody (uid and gid 65534) with no capabilities, in its own user, pid,
// UTS, IPC and network namespaces, and cannot make more user namespaces:
// this holds whoever starts agentloop, root included. It is Linux-only.
//
// Inside its user namespace, nobody stands for the user who started
// agentloop: files it writes in the workspace belong to that user.
type Sandbox struct {
	// Bwrap is the path of the bwrap binary.
	Bwrap string
	// Writable are more directories bound read-write, besides the
	// workspace and the spill directory.
	Writable []string
	// Sockets are host Unix sockets (or directories of them) the command
	// may connect to, bound at the same path; every other socket under
	// /run, /var/run, /tmp and /var/tmp is out of sight.
	Sockets []string
	// Network keeps the host's network. Off by default: commands see only
	// their own loopback.
	Network bool
}

// SandboxUID and SandboxGID are the ids a sandboxed command runs as
// (nobody and nogroup).
const (
	SandboxUID = 65534
	SandboxGID = 65534
)

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
	c := proc.CommandContext(ctx, args[0], args[1:]...)
	var stderr bytes.Buffer
	c.Cmd.Stderr = &stderr
	err := c.Run(bashReapTimeout) // the sandbox's pid 1 may outlive bwrap: Run collects it
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
		// A user namespace whoever starts it: as root, bwrap would
		// otherwise keep every capability and the host's uid 0.
		"--unshare-user", "--uid", strconv.Itoa(SandboxUID), "--gid", strconv.Itoa(SandboxGID),
		"--disable-userns", "--cap-drop", "ALL",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox", "--unshare-cgroup-try",
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
	}
	// Private temporary and runtime directories: the host's Unix sockets
	// (a Docker daemon, a database, an agent) live there.
	for _, d := range sandboxHidden() {
		args = append(args, "--tmpfs", d)
	}
	if s.Network {
		// Name resolution may go through a socket or file under /run.
		for _, d := range []string{"/run/systemd/resolve", "/run/resolvconf"} {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				args = append(args, "--ro-bind", d, d)
			}
		}
	}
	for _, p := range s.Sockets {
		if p != "" && filepath.IsAbs(p) {
			args = append(args, "--bind", p, p)
		}
	}
	seen := map[string]bool{}
	for _, d := range append(append([]string{dir}, writable...), s.Writable...) {
		// Binding / or a hidden directory itself would undo the read-only
		// root or the private directory.
		if d == "" || d == "/" || slices.Contains(sandboxHidden(), d) || seen[d] {
			continue
		}
		seen[d] = true
		args = append(args, "--bind", d, d)
	}
	if !s.Network {
		args = append(args, "--unshare-net")
	}
	args = append(args,
		"--die-with-parent",
		// A new session stops a command from pushing input into the
		// terminal agentloop runs in (TIOCSTI).
		"--new-session",
		"--chdir", dir,
		"--",
	)
	return append(args, argv...)
}

// sandboxHidden are the directories the sandbox replaces with empty,
// private ones: /tmp always, and /var/tmp, /run and /var/run where they
// are directories (/var/run is a symlink to /run on current systems;
// bwrap cannot mount over a path that is not there in the read-only root).
// They are looked up when a sandbox is first used, not at start-up.
var sandboxHidden = sync.OnceValue(func() []string {
	dirs := []string{"/tmp"}
	for _, d := range []string{"/var/tmp", "/run", "/var/run"} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	return dirs
})

// sandboxDir returns the real path of dir, which bwrap needs for binds
// under symlinked directories.
func sandboxDir(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}
