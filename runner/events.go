package runner

import (
	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// The runner's event types. They travel in agent.Event with the payload
// (a Notice) in Data, in the same stream as the attempts' events.
const (
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
	// the rest of the run (and remembered, see Params.Windows).
	EventWindowLearned agent.EventType = "window_learned"
	// EventWarning: something the user should know (a skipped hook file,
	// an MCP server that failed, a session repair).
	EventWarning agent.EventType = "warning"
	// EventHookMessage: a hook has a message for the user.
	EventHookMessage agent.EventType = "hook_message"
	// EventRunEnd: the run ended; the payload summarises the Result.
	EventRunEnd agent.EventType = "run_end"
)

// Notice is the payload of the runner's events. Only the fields that apply
// are set; Message is always a sentence for people.
type Notice struct {
	V    int    `json:"v"`
	Type string `json:"type"`
	// Message says what happened, for a one-line display.
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// DelayMs is the wait before a retry.
	DelayMs int64 `json:"delayMs,omitempty"`
	// Attempt and Max count retries or compactions.
	Attempt int `json:"attempt,omitempty"`
	Max     int `json:"max,omitempty"`
	// Lane, Position and WaitedMs describe lane waits.
	Lane     string `json:"lane,omitempty"`
	Position int    `json:"position,omitempty"`
	WaitedMs int64  `json:"waitedMs,omitempty"`
	// Streamed is set on a retry whose failed reply had already streamed
	// text: a display should not show the retried text twice.
	Streamed bool `json:"streamed,omitempty"`
	// Window is the context window learned, on window_learned.
	Window int `json:"window,omitempty"`
	// Run summary, on run_end.
	SessionID  string `json:"sessionId,omitempty"`
	Attempts   int    `json:"attempts,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	Error      string `json:"error,omitempty"`
}

func noticeEvent(t agent.EventType, n Notice) agent.Event {
	n.V = 1
	n.Type = string(t)
	data, _ := llm.MarshalJSON(n)
	return agent.Event{Type: t, Data: data}
}
