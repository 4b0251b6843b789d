// Package agent is the inner loop of agentloop: context → model stream →
// tool scheduling → tool results → next turn, until the model answers
// without calling a tool. It has pi-agent-core's semantics (turns, steering
// and follow-up queues, the continuation rule) and Claude Code's streaming
// tool execution: a concurrency-safe call starts as soon as its block is
// complete in the stream, while the model keeps talking; calls that may
// change things wait for the message to complete and run alone, in order.
//
// An Agent holds one conversation. Run and Continue return the events of a
// run as an iter.Seq2; Subscribe registers handlers that see the same
// events, in the same single order. Events encode to the versioned JSON
// protocol of docs/protocol.md.
//
// When the model would stop, the stop chain decides (stopchain.go): a reply
// cut off at its output limit is withdrawn (retry_reset) and asked again
// with the limit raised to the model's (Config.MaxOutputTokens, up to
// 64,000), then continued with a prompt at most 3 times; the Stop hook, a
// token budget and the BeforeFinalize hook may each keep the run going a
// bounded number of times (stop_continuation events).
//
// Contracts the loop keeps: every tool call in an assistant message gets
// exactly one tool result (synthetic when a call was cancelled, skipped or
// never started), appended in the order the model asked; a turn whose tools
// ran is kept with their results even when its stream failed afterwards;
// hooks and tools cannot crash the run (panics become results or hook_error
// events); nothing the run starts outlives it.
//
// agent imports llm, tool and hook (for the seam type only: Hooks is
// hook.Seams, so the bus's seams are handed to the loop whole). Policies
// (approval, hooks, compaction, persistence) are function-typed fields of
// Config that the caller binds.
package agent
