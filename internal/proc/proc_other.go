//go:build !unix

package proc

import (
	"os"
	"os/exec"
	"time"
)

// EnableSubreaper is a no-op on this system.
func EnableSubreaper() error { return nil }

func setGroup(cmd *exec.Cmd) {}

// Kill ends t.Root only: this system has no process groups to sweep.
func Kill(t Target) []Proc {
	if t.Root > 0 {
		if p, err := os.FindProcess(t.Root); err == nil {
			_ = p.Kill()
		}
		return []Proc{{Pid: t.Root}}
	}
	return nil
}

// Reap does nothing on this system.
func Reap(killed []Proc, except int, timeout time.Duration) []Proc { return nil }

// Alive reports nothing on this system.
func Alive(tag string) (tagged, zombies []int) { return nil, nil }

// Find cannot list processes on this system; it returns nil.
func Find(t Target) []Proc { return nil }

// ReapOrphans does nothing on this system.
func ReapOrphans() int { return 0 }

// Stamp returns pid; start times are known on Linux only.
func Stamp(pid int) Proc { return Proc{Pid: pid} }

// EndAll does nothing on this system.
func EndAll(timeout time.Duration) []Proc { return nil }

// Now returns 0: start times are known on Linux only.
func Now() uint64 { return 0 }
