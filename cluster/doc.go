// Package cluster lets several gateway nodes share sessions through one
// PostgreSQL database: runs are queued in the database and claimed by any
// node, each session has a lease (owner, epoch, expiry) that its owner
// renews by heartbeat, and every write of a run (transcript entries through
// session/pgstore, events, approvals) is fenced by the epoch its lease was
// taken at, so a node that paused or lost the database past its lease
// writes nothing once another node took the session over.
//
// The timings are in Config: a lease lasts LeaseTTL (15 s) and is renewed
// every Heartbeat (5 s); a node that could not renew for SelfFence (10 s)
// cancels its runs itself, before its leases can expire; idle nodes look
// for runs every Poll (1 s), or at once on NOTIFY. A run whose node died
// is claimed again within LeaseTTL + Poll of that node's last heartbeat.
//
// Events of a session are stored with a seq that grows by one per event
// across owners (AppendEvent), so a client following a session from any
// node sees one gap-free stream. Commands (steer, follow-up, abort) and
// approval decisions are accepted by any node and delivered to the owner
// through run_commands (Claim.Commands). The in-doubt helpers (ToolStarted,
// InDoubt, ResolveInDoubt) give a tool that was running when its node died
// a result saying so, or tell the new owner to run it again when it only
// reads.
//
// cluster imports session, session/pgstore, llm, clock and pgx.
package cluster
