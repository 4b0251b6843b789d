// Package hook is the hook bus: the named points of a run's lifecycle at
// which code outside the loop may observe or change what happens, the order
// in which the hooks at one point run, and how their answers are merged.
//
// hook sits low in the house, beside tool: it imports llm, tool and
// internal/proc (which ends a command hook's whole process tree) from
// agentloop, and nothing above them.
//
// # The bus
//
// Go programs register functions on a [Bus] with a [Spec] (name, priority,
// timeout). Each point has a typed registration method (OnBeforeToolCall)
// and a typed fire method (BeforeToolCall) that returns the merged answer.
// A bus may be shared by many runs; a run that adds hooks of its own (its
// session's command hooks) adds them to a [Bus.Derive]d copy.
//
// At a modifying point (before_tool_call, before_prompt_build, stop, ...)
// hooks run one after another, highest priority first, and their answers
// are merged: the first defined value wins, prompt contexts are
// concatenated in priority order, a block at before_tool_call or
// user_prompt_submit stops the hooks after it, and rewrites (arguments at
// before_tool_call, results at tool_result_persist) are seen by the hooks
// after, so the last rewrite wins. At a void point (llm_input,
// after_tool_call, agent_end, ...) hooks only observe: they run
// concurrently and the fire method waits for them.
//
// Every hook call is bounded by its timeout. A hook's error, panic or
// timeout is reported through [Options.Report] as a [Notice] and never ends
// the run; a before_tool_call guard that fails blocks the call unless its
// Spec says FailOpen. A Go hook that ignores its context past its timeout
// is abandoned, not killed: [Bus.Wait] at the end of a run waits for it.
//
// The agent loop takes function-typed seams rather than this package;
// [Bus.Seams] returns them in the agent's shape, with tool approval
// ([tool.Approval]) folded in after the before_tool_call hooks.
//
// # Command hooks in Claude Code's format
//
// [Load] reads $AGENTLOOP_HOME/settings.json (the user's, always trusted)
// and <workspace>/.agentloop/settings.json (the project's, run only in a
// trusted workspace) and registers their command hooks on the bus, so a
// hook script written for Claude Code runs unchanged:
//
//	{"hooks": {"PreToolUse": [{"matcher": "Bash|Edit",
//	   "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 60}]}]}}
//
// Events and where they fire: PreToolUse at before_tool_call; PostToolUse
// and PostToolUseFailure at tool_result_persist (what they say is appended
// to the result the model reads), PostToolUse only after the tool ran and
// succeeded, PostToolUseFailure (whose input carries error instead of
// tool_response) only after it ran and failed; a call refused by a hook,
// the approval or loop detection runs neither; UserPromptSubmit, Stop, SessionStart, SessionEnd; PreCompact and
// PostCompact at before_compaction and after_compaction. Other events and
// hook types are listed as inactive.
//
// A matcher is a regexp anchored at both ends, tried against the Claude
// Code name of the tool and against ours ("Write" does not match
// TodoWrite); empty or "*" matches every call. For SessionStart it matches
// the source, for PreCompact and PostCompact the trigger, for SessionEnd
// the reason; UserPromptSubmit and Stop ignore it.
//
// A command runs with bash (or sh) -c in the workspace, in its own process
// group, with AGENTLOOP_PROJECT_DIR and CLAUDE_PROJECT_DIR set to the
// workspace. Its stdin is the event as JSON with Claude Code's fields
// (session_id, transcript_path, cwd, hook_event_name, tool_name,
// tool_input, tool_use_id, tool_response, prompt, stop_hook_active, source,
// reason, trigger, custom_instructions), plus agentloop_tool_name and
// agentloop_tool_input carrying our own name and arguments. Our tools that
// have a Claude Code twin appear under its name and field names: bash as
// Bash {command}; read as Read {file_path, offset, limit}; write as Write
// {file_path, content}; edit as Edit {file_path, old_string, new_string},
// from its first edit; grep as Grep {pattern, path, glob}; find as Glob
// {pattern, path}. file_path is absolute.
//
// Exit code 0 passes; for UserPromptSubmit and SessionStart plain stdout is
// added to the context. Exit code 2 blocks where the event can: PreToolUse
// refuses the call and the model reads stderr; Stop keeps the run going
// with stderr as the model's next instruction; UserPromptSubmit refuses the
// prompt and shows stderr to the user; PostToolUse gives stderr to the
// model; elsewhere stderr is shown to the user. Any other exit code is
// reported and ignored. With exit code 0, JSON on stdout is honoured as
// Claude Code documents it: continue:false with stopReason ends the run;
// systemMessage is shown to the user; decision "block" with reason, for
// PostToolUse, Stop and UserPromptSubmit; for PreToolUse,
// hookSpecificOutput.permissionDecision allow (answers an approval
// question, never overrides a denial), ask (forces one), deny (the model
// reads permissionDecisionReason), and updatedInput (mapped back onto our
// arguments); hookSpecificOutput.additionalContext for UserPromptSubmit,
// SessionStart and PostToolUse. The commands of one event run in parallel
// (an identical command once); deny beats ask beats allow.
//
// A command past its timeout (default 60 s) is killed with its whole
// process group and the run goes on with a warning; whatever a finished
// command left running in its group is killed too.
//
// # Trust
//
// [Trust] records a workspace in $AGENTLOOP_HOME/trusted.json by its real
// path; a directory is trusted when it or one of its parents is recorded.
// In an untrusted workspace [Load] skips the project's hooks with one
// warning listing them; LoadOptions.Trust trusts it for one run. [List]
// shows every configured hook with its source file and whether it runs.
package hook
