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
// runner and tests can call each step on its own: [Estimate], [NewBudget],
// [Precheck] and [DecideRoute], [TruncateText] and [ShrinkToolResults],
// [Snip], [Microcompact], [SplitByTokenShare], [ChunkByMaxTokens],
// [FindCutPoint] and [Prune].
//
// The [Compactor] ties them together. Bind it to an agent like this:
//
//	c, err := compact.New(compact.Config{Window: info.ContextWindow, SystemPrompt: sys,
//		Tools: reg.Specs(), Summarizer: &compact.Summarizer{Model: cheap}, Recorder: store})
//	a := agent.New(agent.Config{..., TransformContext: c.TransformContext,
//		Hooks: agent.Hooks{ToolResultPersist: c.PersistToolResult}})
//
// Before each model call [Compactor.TransformContext] caps oversized tool
// results, then, while the prompt is over its budget: snips the middle of
// very old history (older than two windows by default, keeping the first
// turn and a note), clears old bulky results (microcompact), shortens tool
// results when that alone frees enough, summarises history older than the
// keep-recent tokens, and as a last resort prunes the oldest history. Summarisation that keeps failing falls
// back to pruning, and says so in an event. [Compactor.Compact] is the
// manual entry point and [Compactor.Recover] the one for a provider's
// context-overflow error.
//
// The agent keeps its full, untouched history and passes it on every call,
// so the Compactor remembers its decisions (the summary, where the kept
// history starts, which results were shortened) and applies them each time.
// It never rewrites a transcript: what a session must persist leaves through
// the [Recorder] interface (a compaction entry, tool_result_truncation
// entries, and through [SnipRecorder] a snip), and the session store
// replays the same records on load. Events
// and the before/after compaction hooks are function fields the caller
// binds.
//
// Where this package departs from OpenClaw on purpose: estimates count the
// system prompt and the tool schemas, and images in user messages; the
// precheck's truncation shortens the largest results first rather than the
// newest; a summary that fails falls back to pruning rather than to a
// placeholder summary.
//
// compact imports llm and tool only.
package compact
