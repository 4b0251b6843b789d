package cluster

import (
	"context"
	"fmt"
	"time"
)

// Events are stored for every streamed token, so session_events grows with
// every run. Each node prunes it every Config.PruneEvery; an advisory lock
// keeps it to one node at a time. An event is deleted when it is older than
// Config.EventRetention, is not among the last Config.EventsKept of its
// session, and its run has ended: a client that resumes from before what
// is left is told to resync (the gateway's resync event), and the session's
// seq goes on from its last event, which is always kept.

// pruneLock is the pg_advisory_xact_lock key of the pruning.
const pruneLock = 0x616c_7072 // "alpr"

// PruneEvents deletes the events older than olderThan that are not among
// the last keep (at least 1) of their session and whose run is not
// queued or active, and returns how many it deleted. It does nothing while
// another node prunes.
func (n *Node) PruneEvents(ctx context.Context, olderThan time.Duration, keep int) (int64, error) {
	keep = max(keep, 1) // the last event carries the session's seq on
	tx, err := n.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, pruneLock).Scan(&locked); err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	if !locked {
		return 0, nil
	}
	tag, err := tx.Exec(ctx, `DELETE FROM session_events e
		WHERE e.created_at < now() - $1::bigint * interval '1 millisecond'
		  AND e.seq <= (SELECT max(m.seq) FROM session_events m WHERE m.session_id = e.session_id) - $2
		  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = e.run_id AND r.status IN ('queued', 'running', 'requires_action'))`,
		olderThan.Milliseconds(), keep)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return tag.RowsAffected(), nil
}

// prune runs PruneEvents every PruneEvery until ctx ends.
func (n *Node) prune(ctx context.Context) {
	for {
		if err := n.cfg.Clock.Sleep(ctx, n.cfg.PruneEvery); err != nil {
			return
		}
		// A failure (the database away) waits for the next round.
		_, _ = n.PruneEvents(ctx, n.cfg.EventRetention, n.cfg.EventsKept)
	}
}
