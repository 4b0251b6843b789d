package proc

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	subreaperOnce sync.Once
	subreaperErr  error

	// walks counts the walks of /proc this process made, for the tests of
	// the fast path.
	walks atomic.Int64
)

// EnableSubreaper makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER): orphaned descendants are reparented to it
// rather than to init, so a process that escaped with setsid can still be
// found under this process and reaped. It is process-wide and done once;
// later calls return the first result.
func EnableSubreaper() error {
	subreaperOnce.Do(func() {
		subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
	return subreaperErr
}

func setGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// info is what Kill needs from /proc/<pid>/stat.
type info struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64
}

// readStat parses /proc/<pid>/stat. The command name may contain spaces
// and parentheses, so fields are counted from the last ')'.
func readStat(pid int) (info, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return info{}, false
	}
	return parseStat(pid, b)
}

func parseStat(pid int, b []byte) (info, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return info{}, false
	}
	f := strings.Fields(string(b[i+2:]))
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 {
		return info{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || len(f[0]) == 0 {
		return info{}, false
	}
	return info{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], start: start}, true
}

// scan reads every process's stat.
func scan() map[int]info {
	walks.Add(1)
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	all := make(map[int]info, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if in, ok := readStat(pid); ok {
			all[pid] = in
		}
	}
	return all
}

// tagOf returns the value of TagEnv in pid's environment, if any.
func tagOf(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	prefix := []byte(TagEnv + "=")
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}

func hasTag(pid int, tag string) bool {
	v, ok := tagOf(pid)
	return ok && v == tag
}

// children reports whether this process has any child at all, running or
// zombie, from any of its threads: one waitid(P_ALL, WNOHANG|WNOWAIT),
// which takes nothing. It is the fast path of every sweep: what a sweep
// finds is always in this process's subtree, and a process without
// children has none, so in the common case (a command that exited and
// left nothing behind, whose shell exec.Cmd has already waited for)
// nothing under /proc is read. zombie reports whether one of the children
// is waiting to be collected. A failure other than ECHILD reads as having
// children, so the caller looks properly.
func children() (any, zombie bool) {
	var si unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &si, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
	switch {
	case errors.Is(err, unix.ECHILD):
		return false, false
	case err != nil:
		return true, true
	}
	return true, si.Signo != 0
}

// find returns the processes t names, from this process's subtree.
func find(t Target) map[int]info {
	if any, _ := children(); !any {
		return nil
	}
	self := os.Getpid()
	all := subtree(self)
	children := make(map[int][]int, len(all))
	for _, in := range all {
		children[in.ppid] = append(children[in.ppid], in.pid)
	}
	out := make(map[int]info)
	if t.Root > 0 {
		if _, ok := all[t.Root]; ok {
			walk(t.Root, children, func(pid int) { out[pid] = all[pid] })
		}
	}
	if t.AdoptedSince > 0 {
		own := unix.Getpgrp()
		exe, _ := os.Stat("/proc/self/exe")
		for _, pid := range children[self] {
			in := all[pid]
			if in.state == 'Z' || in.pgrp == own || in.start < t.AdoptedSince || nestedPidNS(pid) {
				continue
			}
			if _, tagged := tagOf(pid); tagged {
				continue // a command's own child, or its tagged escapee
			}
			// A child being started has our environment, untagged, until
			// it execs: it still runs our executable.
			if e, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe"); err != nil || exe == nil || os.SameFile(e, exe) {
				continue
			}
			walk(pid, children, func(p int) { out[p] = all[p] })
		}
	}
	if t.Group > 0 || t.Tag != "" {
		walk(self, children, func(pid int) {
			if pid == self {
				return
			}
			in := all[pid]
			// A child of this process from a nested pid namespace is a
			// sandbox's pid 1 that outlived its bwrap parent and was
			// reparented here; no exec.Cmd waits for it (agentloop never
			// starts a child in a new pid namespace itself). It is taken
			// whatever its state: while it exits its environment can no
			// longer be read, and once it is a zombie it has none.
			if in.ppid == self && nestedPidNS(pid) {
				out[pid] = in
				return
			}
			if in.state == 'Z' {
				// A zombie has no environment to match, but keeps its
				// group. One of the command's group reparented here is
				// collected; the group's leader is the exec.Cmd's own and
				// is left to its Wait.
				if t.Group > 0 && in.pgrp == t.Group && in.ppid == self && pid != t.Group {
					out[pid] = in
				}
				return
			}
			tag, tagged := tagOf(pid)
			switch {
			case t.Tag != "" && tagged && tag == t.Tag:
				out[pid] = in
			case t.Group > 0 && in.pgrp == t.Group && (!tagged || tag == t.Tag):
				// A group member carrying another command's tag belongs to
				// that command: the group id may have been reused.
				out[pid] = in
			}
		})
	}
	return out
}

// subtree returns root and its descendants. It follows
// /proc/<pid>/task/<tid>/children, which costs a few reads per process of
// the subtree; where the kernel lacks those files it scans all of /proc.
func subtree(root int) map[int]info {
	walks.Add(1)
	out := make(map[int]info)
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, seen := out[pid]; seen {
			continue
		}
		in, ok := readStat(pid)
		if !ok {
			continue
		}
		out[pid] = in
		kids, ok := childrenOf(pid)
		if !ok {
			return scan()
		}
		stack = append(stack, kids...)
	}
	return out
}

// childrenOf lists pid's children from the children files of its
// threads. It reports false when those files do not exist.
func childrenOf(pid int) ([]int, bool) {
	base := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(base)
	if err != nil {
		return nil, true // the process is gone
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	var kids []int
	for _, tid := range tids {
		b, err := os.ReadFile(base + "/" + tid + "/children")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				if _, serr := os.Stat(base + "/" + tid); serr == nil {
					return nil, false // no CONFIG_PROC_CHILDREN
				}
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids, true
}

// nestedPidNS reports whether pid lives in a pid namespace below this
// process's: its NSpid line in /proc/<pid>/status lists more pids than
// this process's own.
func nestedPidNS(pid int) bool {
	n := nsDepth(pid)
	return n > 0 && n > nsDepth(os.Getpid())
}

func nsDepth(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			return len(strings.Fields(rest))
		}
	}
	return 0
}

func walk(pid int, children map[int][]int, visit func(int)) {
	stack := []int{pid}
	seen := map[int]bool{}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		visit(p)
		stack = append(stack, children[p]...)
	}
}

// Find returns the live processes t names, without touching them.
func Find(t Target) []Proc {
	var out []Proc
	for pid, in := range find(t) {
		if in.state != 'Z' {
			out = append(out, Proc{Pid: pid, Start: in.start})
		}
	}
	return out
}

// Now returns the current time on the clock of Proc.Start (clock ticks
// since boot), without reading /proc. Taken just before a command starts,
// it is at or before its root's start time, so it serves as the command's
// Target.AdoptedSince.
func Now() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	// /proc/<pid>/stat counts start times in USER_HZ ticks, 100 a second
	// on every Linux architecture Go supports.
	return uint64(ts.Sec)*100 + uint64(ts.Nsec)/10_000_000
}

// Stamp returns pid with its start time, for Target.AdoptedSince; Start
// is zero when pid is gone.
func Stamp(pid int) Proc {
	in, _ := readStat(pid)
	return Proc{Pid: pid, Start: in.start}
}

// Kill ends every process t names: it stops them all with SIGSTOP, looking
// again until no new one appears (so none can fork behind the sweep), then
// kills them with SIGKILL. It returns what it killed, for Reap.
func Kill(t Target) []Proc {
	return kill(func() map[int]info { return find(t) })
}

// EndAll kills every descendant of this process (its children, theirs, and
// what it adopted as a subreaper), whatever their group, tag or signal
// handlers, and collects those reparented to it, waiting at most timeout.
// It is for a process about to exit, which must leave nothing running
// behind it: it may take the exit status an exec.Cmd is waiting for. It
// returns the processes still not collected.
func EndAll(timeout time.Duration) []Proc {
	self := os.Getpid()
	killed := kill(func() map[int]info {
		all := subtree(self)
		delete(all, self)
		for pid, in := range all {
			if in.state == 'Z' {
				delete(all, pid)
			}
		}
		return all
	})
	return Reap(killed, 0, timeout)
}

func kill(find func() map[int]info) []Proc {
	killed := make(map[int]info)
	for round := 0; round < 64; round++ {
		found := find()
		fresh := 0
		for pid, in := range found {
			if old, ok := killed[pid]; ok && old.start == in.start {
				continue
			}
			killed[pid] = in
			fresh++
			_ = unix.Kill(pid, unix.SIGSTOP)
		}
		if fresh == 0 {
			break
		}
	}
	out := make([]Proc, 0, len(killed))
	for pid, in := range killed {
		_ = unix.Kill(pid, unix.SIGKILL)
		out = append(out, Proc{Pid: pid, Start: in.start})
	}
	return out
}

// Reap waits for the killed processes that were reparented to this process
// (as a subreaper) to become zombies, and collects them, so none is left
// behind. except is a pid someone else waits for (the exec.Cmd's own
// process). It gives up after timeout and returns the processes still
// pending.
func Reap(killed []Proc, except int, timeout time.Duration) []Proc {
	self := os.Getpid()
	deadline := time.Now().Add(timeout)
	pending := make([]Proc, 0, len(killed))
	for _, p := range killed {
		if p.Pid != except {
			pending = append(pending, p)
		}
	}
	delay := 100 * time.Microsecond
	for {
		rest := pending[:0]
		for _, p := range pending {
			in, ok := readStat(p.Pid)
			if !ok || in.start != p.Start {
				continue // gone: reaped by its own parent
			}
			if in.ppid == self && in.state == 'Z' {
				var ws unix.WaitStatus
				_, err := unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
				if err == nil || errors.Is(err, unix.ECHILD) {
					continue
				}
			}
			rest = append(rest, p)
		}
		pending = rest
		if len(pending) == 0 || time.Now().After(deadline) {
			return pending
		}
		time.Sleep(delay)
		if delay < 10*time.Millisecond {
			delay *= 2
		}
	}
}

// ReapOrphans collects the zombie children of this process that it never
// started itself: orphans reparented to it as a subreaper, for instance
// the background children of a hook whose group was killed. It returns how
// many it collected. A child started by exec.Cmd is never touched: it is
// either its own group's leader (Setpgid or Setsid) or in this process's
// group, while such an orphan sits in some other process's group. Orphans
// that made themselves group leaders cannot be told apart and are left.
func ReapOrphans() int {
	if _, zombie := children(); !zombie {
		return 0
	}
	self := os.Getpid()
	own := unix.Getpgrp()
	walks.Add(1)
	kids, ok := childrenOf(self)
	if !ok {
		for pid, in := range scan() {
			if in.ppid == self {
				kids = append(kids, pid)
			}
		}
	}
	n := 0
	for _, pid := range kids {
		in, ok := readStat(pid)
		if !ok || in.ppid != self || in.state != 'Z' || in.pgrp == pid || in.pgrp == own {
			continue
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
			n++
		}
	}
	return n
}

// Alive returns the live (not zombie) processes anywhere on the machine
// whose TagEnv equals tag, and this process's zombie children; a clean
// sweep leaves both empty. It is meant for tests and diagnostics.
func Alive(tag string) (tagged, zombies []int) {
	self := os.Getpid()
	for pid, in := range scan() {
		switch {
		case in.state == 'Z' && in.ppid == self:
			zombies = append(zombies, pid)
		case in.state != 'Z' && tag != "" && hasTag(pid, tag):
			tagged = append(tagged, pid)
		}
	}
	return tagged, zombies
}
