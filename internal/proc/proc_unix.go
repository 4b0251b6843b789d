//go:build unix && !linux

package proc

import (
	"os/exec"
	"syscall"
	"time"
)

// EnableSubreaper is a no-op outside Linux: there is no subreaper, so a
// descendant that leaves the process group escapes Kill.
func EnableSubreaper() error { return nil }

func setGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Kill ends the process group of t (and t.Root). Outside Linux it cannot
// find processes by tag.
func Kill(t Target) []Proc {
	if t.Group > 0 {
		_ = syscall.Kill(-t.Group, syscall.SIGKILL)
	}
	if t.Root > 0 {
		_ = syscall.Kill(t.Root, syscall.SIGKILL)
		return []Proc{{Pid: t.Root}}
	}
	return nil
}

// Reap does nothing outside Linux.
func Reap(killed []Proc, except int, timeout time.Duration) []Proc { return nil }

// Alive reports nothing outside Linux.
func Alive(tag string) (tagged, zombies []int) { return nil, nil }

// Find cannot list processes outside Linux; it returns nil.
func Find(t Target) []Proc { return nil }

// ReapOrphans does nothing outside Linux: there is no subreaper.
func ReapOrphans() int { return 0 }

// Stamp returns pid; start times are known on Linux only.
func Stamp(pid int) Proc { return Proc{Pid: pid} }

// EndAll does nothing outside Linux: the descendants of this process
// cannot be listed.
func EndAll(timeout time.Duration) []Proc { return nil }
