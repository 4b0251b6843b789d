// Package hook is the hook bus: the named points of a run's lifecycle at
// which code outside the loop may observe or change what happens, the order
// in which the hooks at one point run, and how their answers are merged.
//
// Hooks come from two places. Go programs register functions on a [Bus]
// with a priority. Users configure shell commands in Claude Code's settings
// format ($AGENTLOOP_HOME/settings.json and <workspace>/.agentloop/settings.json);
// [Load] reads both files, skips a project's own hooks unless the workspace
// is trusted (see [Trust]), and registers the commands on the bus as
// ordinary hooks, so a script written for Claude Code runs unchanged.
//
// Two kinds of point exist. At a modifying point (before_tool_call,
// before_prompt_build, stop, ...) hooks run one after another, highest
// priority first, and their answers are merged: the first defined value
// wins, prompt contexts are concatenated, and a blocking answer stops the
// hooks after it. At a void point (llm_input, after_tool_call, agent_end,
// ...) hooks only observe: they run concurrently and the fire method waits
// for them, each bounded by its timeout, so no hook outlives the run. A
// hook's error, panic or timeout is reported through [Options.Report] and
// never ends the run.
//
// The agent loop takes function-typed seams rather than this package;
// [Bus.Seams] returns them in the agent's shape.
//
// hook sits low in the house, beside tool: it imports llm and tool from
// agentloop and nothing above them.
package hook
