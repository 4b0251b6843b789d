// Package loopguard detects a model stuck repeating tool calls, so the run
// can warn it, refuse the call, and finally stop.
//
// A Guard remembers the last 30 calls of a session. A call's identity is
// its tool name plus the SHA-256 of its canonical JSON arguments
// (CanonicalJSON: keys sorted, no whitespace, numbers and strings written
// exactly as JavaScript's JSON.stringify writes them, so the identities
// match OpenClaw's). Before each call, four detectors run in order; the
// first that fires decides:
//
//   - the global circuit breaker: the same call has made no progress
//     (identical result, or blocked) Global times in a row, counting this
//     one: the call is refused and the run must stop (Action Stop);
//   - polling without progress (command_status; process with action poll
//     or log): the same result again and again, warning then block;
//   - ping-pong: the newest calls alternate between two identities and
//     this call continues the pattern; it warns, and blocks only when
//     every call of the pattern returned the same result each time;
//   - generic repeat: the same identity made again within the window,
//     whatever it returned (polling calls excepted), warning then block.
//
// # Counting
//
// Every count includes the call being checked, so the defaults read
// literally: the 10th identical call runs with a warning appended to its
// result (the model sees it), the 20th is refused with an error result,
// and the 30th identical no-progress call stops the run. (OpenClaw counts
// only the earlier calls in the history, so its warning comes with the
// 11th call; its ping-pong count already includes the current call and
// agrees with ours.) Refused calls are recorded too, as calls without
// progress, so a model that keeps trying a refused call reaches the
// breaker instead of looping on refusals forever. Calls the agent answers
// itself without running hooks (a tool that does not exist, arguments that
// do not validate) are checked when their result is recorded (After), with
// the same thresholds.
//
// A call's outcome is the tool's own result, before the guard's warning or
// anything else is added to it, without details that change on every call
// (VolatileDetail: durations, timestamps, spill file paths).
//
// # Differences from OpenClaw
//
// Detection is on by default; warnings are shown to the model (appended
// to the call's result) instead of only logged; generic repeats are
// blocked at the critical threshold; refused calls are recorded; messages
// are our own words. Config.OnEvent sees every warning, block and stop.
//
// # Binding to an agent
//
// loopguard does not import the agent package. Guard.Hooks returns
// functions with the signatures of agent.Hooks' BeforeToolCall,
// AfterToolCall and ToolResultPersist; the caller assigns them and passes
// the run's context.CancelCauseFunc as the stop function. When the
// breaker trips, the refused call still gets its error result (tool calls
// and results stay paired), the run's context is cancelled with a
// *StopError, and the run ends as aborted; context.Cause on the run's
// context returns the *StopError, and errors.Is(err, ErrCircuitBreaker)
// tells it from a user's abort.
//
// loopguard imports llm and tool only.
package loopguard
