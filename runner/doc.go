// Package runner is the outer loop of one agent run: it makes runs survive
// the real world.
//
// A Runner is built once, by New, from a Config: what lives as long as the
// program (the session store, the model resolver, auth state, hooks, MCP
// servers, compaction and loop-guard settings, lane caps, the clock). Its
// Start takes one run's Request (the prompt, the session to use, the
// resolved model, tools, budgets) and returns a *Run, whose Events yield
// the run's typed events until run_end; Runner.Run is Start then Wait. A
// run:
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
//     caller's shared Config.Bus is never changed; starts MCP servers
//     (package tool/mcp) before the first model call; binds compaction (package compact) and tool-loop
//     detection (package loopguard);
//   - runs attempts, each one pass of package agent over the repaired
//     context, until the run succeeds, fails for good, or reaches its
//     iteration cap (MaxIterations). Between attempts decide, a pure
//     function, applies the cascade: overflow → compaction (3 times) →
//     one tool-result truncation → a user-facing error; a big timed-out
//     prompt → compaction; a refused thinking level → a level the provider
//     accepts; refused credentials or a rate limit → the next auth profile
//     (failing profiles rest by package auth's rules, in Config.Auth's state
//     file or else in the Runner's memory); transient failures
//     → retry with backoff honouring Retry-After; a model that cannot serve
//     the run → the next fallback model (never for an overflow); anything
//     else → the classified reason's user message.
//     Each decision is an event (retry, compaction_retry, ...);
//   - stops cleanly at the run timeout (extended once during a compaction),
//     a cost or token budget, a hook's halt, or the loop guard's breaker,
//     and reports why in Result.Reason.
//
// A Runner keeps its own lanes and registry of active runs (nothing is
// package-level): Run.Steer and Run.FollowUp inject messages into a run,
// Run.Abort stops it, Runner.Active lists them, Runner.Close stops them all.
//
// Events of the runner, of compaction and of every attempt come in one
// total order, as Events with Go payloads (the agent's agent.Event, a
// Notice, a compact.Event, the Result on run_end), numbered by seq across
// the runs of a session. Event.MarshalJSON is their one JSON form,
// protocol v2 (docs/protocol.md), which the CLI's --json output and a
// server's WebSocket show.
//
// runner imports agent, auth, compact, failover, hook, llm, loopguard,
// session, tool and tool/mcp; nothing in agentloop imports it except the CLI and the gateway.
package runner
