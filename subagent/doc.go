// Package subagent is the agent tools: a model hands a self-contained task
// to a child agent with a fresh context, a normal session on the subagent
// lane whose header names its parent.
//
// A Manager, built once from a Config (the runner, the store, the Request
// children start from, the agent definitions, the limits), gives a run its
// tools: agent (start a child; foreground calls block and return its final
// text, background calls return a task id at once), agent_send (steer or
// follow up a running child) and agent_stop (stop a child and its
// descendants, the deepest first). There is no status tool: a background
// result arrives as a message.
//
// Delivery is exactly once and survives a crash. The spawn and the result
// are custom entries of the parent's transcript (subagent_spawned,
// subagent_result); the result is written only after checking, under the
// parent session's lock, that none is there. A parent that is running
// receives a background result at its next turn boundary (a steer); an idle
// parent gets the notification appended under its lock and a follow-up run
// (runner.Request.Resume). Settle, when a session is opened for a run,
// settles every spawn without a result: a child that finished gives its
// result, one that did not is reported interrupted.
//
// subagent imports runner, session, tool, hook and llm; the CLI and the
// gateway import it and add its tools to their runs.
package subagent
