//go:build unix

package hook

import (
	"os/exec"
	"syscall"
)

// inOwnGroup starts cmd as the leader of a new process group, and makes
// cancelling it kill the whole group, so that a hook's children die with it.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
}

// killGroup kills what is left of cmd's process group. The group id stays
// reserved while any member lives, so this cannot hit a stranger.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}
