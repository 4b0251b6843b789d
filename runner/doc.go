// Package runner is the outer loop of one agent run: it makes runs survive
// the real world.
//
// Run (or Runner.Run) takes a prompt and everything resolved around it (the
// model, the tools, the system prompt) and:
//
//   - queues the run in its lanes: first a per-session FIFO (one run at a
//     time per session key), then a global lane with a cap (main 4, subagent
//     8, cron 1, nested 1; Config.LaneCaps). A run that waits says so in
//     lane_wait and lane_acquired events; a run cancelled while queued
//     leaves no trace;
//   - opens or creates its session (package session) and holds its write
//     lock for the whole run, appending every message as it ends;
//   - loads the user's and the workspace's hooks (package hook) and fires
//     session_start, user_prompt_submit and session_end itself, binding the
//     rest into the agent (before_agent_finalize is asked once at every end
//     of the run, also after the stop hooks' continuations are spent); a
//     caller's shared Params.Bus is never changed; starts MCP servers (package tool/mcp) before the
//     first model call; binds compaction (package compact) and tool-loop
//     detection (package loopguard);
//   - runs attempts, each one pass of package agent over the repaired
//     context, until the run succeeds, fails for good, or reaches its
//     iteration cap (MaxIterations). Between attempts Decide, a pure
//     function, applies the cascade: overflow → compaction (3 times) →
//     one tool-result truncation → a user-facing error; a big timed-out
//     prompt → compaction; a refused thinking level → a level the provider
//     accepts; refused credentials or a rate limit → the next auth profile
//     (failing profiles rest by package auth's rules, in Params.Auth's state
//     file or else in the Runner's memory); transient failures
//     → retry with backoff honouring Retry-After; a model that cannot serve
//     the run → the next fallback model (never for an overflow); anything
//     else → the classified reason's user message.
//     Each decision is an event (retry, compaction_retry, ...);
//   - stops cleanly at the run timeout (extended once during a compaction),
//     a cost or token budget, a hook's halt, or the loop guard's breaker,
//     and reports why in Result.Reason.
//
// Runner keeps the registry of active runs: Steer injects a message into a
// run, Abort stops it, Active lists them.
//
// Events of the runner, of compaction and of every attempt reach
// Params.OnEvent in one total order, as agent.Events (the runner's own with
// a Notice in Data), so the CLI's --json output and a server's WebSocket
// show one stream.
//
// runner imports agent, auth, compact, failover, hook, llm, loopguard,
// session, tool and tool/mcp; nothing in agentloop imports it except the CLI and the gateway.
package runner
