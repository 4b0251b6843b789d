// Package compact keeps a conversation under its model's context window.
//
// It is the context-budget room of agentloop: token accounting, the
// context-window guard, the budget (reserve for the reply, tokens kept
// verbatim), the precheck that runs before every model call and chooses a
// route (fits, truncate tool results only, compact then truncate, compact),
// tool-result size control, snip and microcompact, staged LLM summarisation
// and pruning.
//
// Most of it is pure functions over []llm.Message, so the agent loop, the
// runner and tests can call each step on its own. The [Compactor] ties them
// together: its [Compactor.TransformContext] method has the shape the agent
// loop calls before every model request, and [Compactor.Compact] is the
// manual entry point. What a session must persist (compaction summaries,
// truncated tool results) leaves through the [Recorder] interface; events
// and hooks are function fields the caller binds.
//
// compact imports llm and tool only. It never rewrites a transcript: the
// Compactor keeps what it decided (the summary, where the kept history
// starts, which results were shortened) and applies it to the full history
// on every call, and the session store replays the same records on load.
package compact
