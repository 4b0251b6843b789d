// Package session is the transcript room of agentloop: every run is
// persisted as an append-only JSONL file whose entries form a tree, guarded
// by a cross-process write lock, and turned back into the model's context
// on resume.
//
// The file format is pi's session format version 3 (a header line, then one
// entry per line with id and parentId), plus one entry type of our own,
// tool_result_truncation. Appends are whole lines written with one write
// each; a torn last line is dropped on load and cut off before the next
// append, so a crash never leaves a corrupt line in the middle of a file.
//
// Opening a long session to continue it reads the file from its end back
// to where the context starts (tail.go), falling back to a full load when
// the tail cannot be sure; listings read a cache of each transcript's
// header and totals kept beside the transcripts (summary.go). Whole files
// are read for show, export, repair, fork, and a branch off the path.
//
// The package also holds the repair pipeline applied to the outgoing history
// before every model call: tool-call/result pairing repair, tool-call input
// sanitising, history limits and provider turn validation. These are pure
// functions over []llm.Message; Transform chains them in the shape the
// agent's TransformContext hook takes.
//
// Store is the persistence interface; JSONLStore, the default, keeps files
// under $AGENTLOOP_HOME/sessions/<cwd-slug>/. The sessiontest package holds
// the conformance suite every Store must pass.
//
// session imports llm, internal/atomicfile and the standard library only.
package session
