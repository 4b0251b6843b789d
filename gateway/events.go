package gateway

// The gateway's own event types, in a session's stream beside the
// runner's (docs/protocol.md, "Gateway events").
const (
	// EventRunQueued: a run waits behind the session's active run;
	// position 1 is next.
	EventRunQueued = "run_queued"
	// EventSessionStatus: the session's status changed (idle, running,
	// requires_action).
	EventSessionStatus = "session_status"
	// EventApprovalRequested: a tool call waits for a person's answer.
	EventApprovalRequested = "approval_requested"
	// EventApprovalResolved: it was answered, timed out or cancelled.
	EventApprovalResolved = "approval_resolved"
	// EventResync: the client asked to resume from a seq the ring no
	// longer holds: refetch the session, its messages and its pending
	// approvals.
	EventResync = "resync"
)
