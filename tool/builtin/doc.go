// Package builtin holds the coding tools an agent works with: read, write,
// edit, grep, find and ls over files, and bash, all confined to a
// [Workspace].
//
// A Workspace is a directory tree the tools may touch. Every path a model
// passes is resolved inside it: "..", absolute paths elsewhere and symlinks
// that lead out are refused with an error that says so. Reads outside can
// be allowed ([WorkspaceOptions].AllowReadOutside), and extra directories
// (the session's data directory, where bash spills long output) can be
// made readable. A read-only workspace refuses every write, and [New]
// leaves write and edit out of the tool set.
//
// Paths from the model are cleaned before they are resolved: a leading "@"
// (models copy it from @-mentions) is dropped, and "~" or "~/..." expands
// to the user's home directory, which is then confined like any other
// absolute path. Expanding "~" gives the model a clear "outside the
// workspace" answer instead of a confusing "not found" for a directory
// literally named "~". A path that does not exist as given is tried in the
// spellings a model may have meant: Unicode spaces as plain ones, the
// narrow no-break space macOS puts before AM/PM in screenshot names,
// decomposed Unicode (NFD, as macOS file names often are) and a
// typographic apostrophe.
//
// Confinement holds by construction: a path is checked (for a clear
// error), then opened through an os.Root of the workspace (or of the
// readable directory it lies in), which resolves it one component at a
// time and refuses any step out. A process that swaps a directory or a
// file for a symlink between the check and the open makes the call fail,
// never escape. Reads outside, when AllowReadOutside permits them, are
// not confined. What bash does is bounded by its sandbox, not by this.
//
// Each tool implements [tool.Tool], [tool.ConcurrencyClassifier] (read, grep,
// find and ls run beside other calls; write and edit run alone) and a
// ReadOnly method that approvals and tool policy use.
//
// The package imports llm and tool from agentloop, and internal/proc for
// bash's process groups and sandbox; nothing above them.
package builtin
