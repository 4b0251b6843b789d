package proc

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
)

// TagEnv is the environment variable that marks every process started for
// one command. Descendants inherit it, so it survives setsid and double
// forks (though not a process that clears its environment).
const TagEnv = "AGENTLOOP_PROC_TAG"

// NewTag returns a fresh random tag for one command.
func NewTag() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Prepare sets cmd up to be ended with Kill: it gets its own process group
// and, when tag is not empty, carries tag in TagEnv. A nil cmd.Env is taken
// as the current environment, as exec.Cmd does.
func Prepare(cmd *exec.Cmd, tag string) {
	setGroup(cmd)
	if tag == "" {
		return
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], TagEnv+"="+tag)
}

// Target names the processes Kill ends.
type Target struct {
	// Root is the pid of a still running process whose whole tree is
	// ended, the root included. Zero means none: pass zero once the root
	// has been waited for, as its pid may have been reused.
	Root int
	// Group is a process-group id whose members among this process's
	// descendants are ended.
	Group int
	// Tag selects this process's descendants whose TagEnv equals it.
	Tag string
	// AdoptedSince, when not zero, also selects the processes this process
	// adopted as a subreaper that carry no tag at all and started at or
	// after this time (a Proc.Start, as Stamp gives for the command's
	// root), with all their descendants. A daemon that cleared its
	// environment (env -i) and left the group (setsid) with a double fork
	// is found only this way. A process without a tag cannot be told to
	// belong to one of several commands running at once, so the first of
	// them to end takes it. Linux only.
	AdoptedSince uint64
}

// Proc identifies one process across pid reuse.
type Proc struct {
	Pid   int
	Start uint64 // start time in clock ticks since boot (Linux); 0 elsewhere
}
