// Package proc starts and ends child process trees so that nothing a tool
// starts outlives it. It is the engine room under tool/builtin's bash tool:
// each command runs in its own process group and carries a tag in its
// environment; when the command ends, times out or is aborted, every
// process that belongs to it is found (descendants of the shell, members of
// its process group, processes carrying its tag), stopped, killed and
// reaped. On Linux the agentloop process makes itself a child subreaper, so
// descendants that escape with setsid or a double fork are reparented to it
// instead of to init and can still be found and reaped. A daemon that also
// cleared its environment (env -i) carries no tag: the sweep takes the
// untagged processes this process adopted since the command started
// (Target.AdoptedSince). EndAll kills every descendant, for a process
// about to exit (the CLI's second Ctrl-C, and its end).
//
// A sweep reads /proc only when there is something to find: everything it
// can take is in this process's subtree, so when this process has no child
// left (waitid(P_ALL, WNOHANG|WNOWAIT) says ECHILD, the common case once a
// command's shell has been waited for) it returns at the cost of one
// system call. Now stamps a command's start from the boot clock, so
// AdoptedSince costs no read of /proc either.
//
// It imports only the standard library and golang.org/x/sys.
package proc
