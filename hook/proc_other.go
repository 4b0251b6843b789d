//go:build !unix

package hook

import "os/exec"

// inOwnGroup is a no-op where process groups do not exist: cancelling kills
// the hook's process only.
func inOwnGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
