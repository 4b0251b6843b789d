package runner

import (
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
)

// The runner's event types, with a Notice, in the same stream as the
// attempts' events.
const (
	// EventRunStart: the run starts, always its first event; Start says
	// what it runs on.
	EventRunStart agent.EventType = "run_start"
	// EventToolsReady: the run's tool sources (Config.ToolSources, MCP
	// servers) have started; Notice.Tools lists every tool the run offers,
	// its own and the sources', its policy applied. Only runs with tool
	// sources send it, after the prompt hooks, before the first attempt.
	EventToolsReady agent.EventType = "tools_ready"
	// EventLaneWait: the run waits in a lane (position 1 is next).
	EventLaneWait agent.EventType = "lane_wait"
	// EventLaneAcquired: a run that waited got its slots.
	EventLaneAcquired agent.EventType = "lane_acquired"
	// EventAttemptStart: an attempt (one pass of the agent) starts.
	EventAttemptStart agent.EventType = "attempt_start"
	// EventRetry: a transient failure is retried after a delay.
	EventRetry agent.EventType = "retry"
	// EventCompactionRetry: a context overflow is compacted and retried.
	EventCompactionRetry agent.EventType = "compaction_retry"
	// EventOverflowRetry: an overflow after the attempt's own compaction is
	// retried without compacting again.
	EventOverflowRetry agent.EventType = "overflow_retry"
	// EventTruncationRetry: large tool results were shortened after
	// compaction did not help; the call is retried.
	EventTruncationRetry agent.EventType = "truncation_retry"
	// EventTimeoutCompaction: a timed-out call with a big prompt is
	// compacted and retried.
	EventTimeoutCompaction agent.EventType = "timeout_compaction"
	// EventProfileRotation: the run switched to another auth profile;
	// Reason is why, Message names the profile.
	EventProfileRotation agent.EventType = "profile_rotation"
	// EventModelFallback: the run switched to a fallback model (named in
	// Message); Reason is why.
	EventModelFallback agent.EventType = "model_fallback"
	// EventThinkingFallback: the provider refused the thinking level; the
	// call is retried at the level in Reason.
	EventThinkingFallback agent.EventType = "thinking_fallback"
	// EventPrecheckTruncation: the precheck shortened tool results instead
	// of calling the model over budget; it counts as a fresh attempt.
	EventPrecheckTruncation agent.EventType = "precheck_truncation"
	// EventTimeoutExtended: the run timeout fired during a compaction and
	// was extended once.
	EventTimeoutExtended agent.EventType = "run_timeout_extended"
	// EventLoopDetected: loop detection warned, blocked or stopped.
	EventLoopDetected agent.EventType = "loop_detection"
	// EventWindowLearned: a server's overflow error stated a context
	// window smaller than the model's; Window is the number, used for
	// the rest of the run (and remembered, see Config.Windows).
	EventWindowLearned agent.EventType = "window_learned"
	// EventWarning: something the user should know (a skipped hook file,
	// an MCP server that failed, a session repair).
	EventWarning agent.EventType = "warning"
	// EventHookMessage: a hook has a message for the user.
	EventHookMessage agent.EventType = "hook_message"
	// EventSubagentStart: a tool call of the run started a subagent task
	// (package subagent); Subagent says which.
	EventSubagentStart agent.EventType = "subagent_start"
	// EventSubagentEnd: a subagent task of the run's session ended;
	// Subagent has its status, usage and duration. A background task's end
	// is sent on the stream of the run it is delivered to.
	EventSubagentEnd agent.EventType = "subagent_end"
	// EventRunEnd: the run ended; End is its Result.
	EventRunEnd agent.EventType = "run_end"
)

// Event is one event of a run, in the run's total order. Type says which
// payload is set:
//
//   - the agent's events (agent_start ... agent_end, message_update with
//     its deltas, tool_execution_*): Agent;
//   - run_start: Start, what the run runs on;
//   - the runner's notices (attempt_start, retry, lane_wait, warning, ...):
//     Notice; loop_detection also Loop;
//   - compaction's events (auto_compaction_start, tool_result_truncation,
//     ...): Compaction;
//   - run_end, always the last: End, the Result.
//
// Seq numbers the events of a session from 1, across all its runs on one
// Runner; RunID names the run, SessionID its session ("" without a store).
// An Event handed to Request.OnEvent is valid only during the call (an
// agent message_update's partial message changes after it); Run.Events
// hands out copies that stay valid. Event.MarshalJSON is the one encoding
// to JSON, protocol v2 (docs/protocol.md).
type Event struct {
	Type      agent.EventType
	Seq       int64
	RunID     string
	SessionID string

	Agent      *agent.Event
	Start      *RunStart
	Notice     *Notice
	Loop       *loopguard.Event
	Compaction *compact.Event
	Subagent   *Subagent
	End        *Result
}

// Subagent is the payload of subagent_start and subagent_end.
type Subagent struct {
	TaskID, ChildSessionID, ParentToolCallID string
	// Agent is the agent type (general, or a definition's name).
	Agent      string
	Background bool
	// Depth is the child's depth: 1 below a top-level session.
	Depth int
	// Description is the call's short label.
	Description string
	// Status (subagent_end only): completed, failed, timed_out, cancelled
	// or interrupted.
	Status   string
	Usage    llm.Usage
	Duration time.Duration
	Turns    int
}

// RunStart says what a run runs on, in its first event.
type RunStart struct {
	// Model is provider/id.
	Model string
	// Cwd is the directory of the run's session ("" when none is known).
	Cwd string
	// Lane is the global lane the run waits in.
	Lane string
	// Tools names the run's own tools (its policy applied); the tools of
	// Config.ToolSources (MCP servers) start later, and tools_ready lists
	// them all.
	Tools []string
	// Resumed is set when the session existed before the run.
	Resumed bool
}

// Notice is the payload of the runner's events. Only the fields that apply
// are set; Message is always a sentence for people.
type Notice struct {
	// Message says what happened, for a one-line display.
	Message string
	Reason  string
	// Delay is the wait before a retry, or the extension of a timeout.
	Delay time.Duration
	// Attempt and Max count retries or compactions; on loop_detection,
	// Attempt is how many times the call was seen.
	Attempt, Max int
	// Lane, Position and Waited describe lane waits.
	Lane     string
	Position int
	Waited   time.Duration
	// Streamed is set on a retry whose failed reply had already streamed
	// text: a display should not show the retried text twice.
	Streamed bool
	// Window is the context window learned, on window_learned.
	Window int
	// Tools names every tool the run offers, on tools_ready.
	Tools []string
}
