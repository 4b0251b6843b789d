package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Command kinds sent to a run from any node.
const (
	CommandSteer    = "steer"
	CommandFollowUp = "follow_up"
	CommandAbort    = "abort"
	// CommandApproval carries the decision on a pending action
	// (ApprovalPayload); Resolve sends it.
	CommandApproval = "approval"
)

// Command is one command for a run.
type Command struct {
	ID      int64
	RunID   string
	Kind    string
	Payload json.RawMessage
}

// ApprovalPayload is the payload of a CommandApproval.
type ApprovalPayload struct {
	ActionID string          `json:"actionId"`
	Decision json.RawMessage `json:"decision"`
}

// ErrRunEnded says a command was sent to a run that is not active.
var ErrRunEnded = errors.New("the run is not active")

// Send queues a command for a run, whichever node holds it, and notifies
// that node. The owner gets it on Claim.Commands; an abort also cancels
// the run's context.
func (n *Node) Send(ctx context.Context, runID, kind string, payload json.RawMessage) error {
	err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		return sendTx(ctx, tx, runID, kind, payload)
	})
	if err != nil {
		return fmt.Errorf("send %s to run %s: %w", kind, runID, err)
	}
	return nil
}

// ErrQueueFull says a steer or follow-up message was refused: the run has
// as many unread ones as the sender allows (SendMessage).
var ErrQueueFull = errors.New("the run has too many steer and follow-up messages it has not read yet")

// SendMessage sends a steer or follow-up message (kind) to a run, unless
// the run already has limit such messages sent through the cluster that
// it has not read yet (MarkRead): then ErrQueueFull, and nothing is sent.
// Senders on every node are counted together; limit <= 0 is no bound.
func (n *Node) SendMessage(ctx context.Context, runID, kind, text string, limit int) error {
	if kind != CommandSteer && kind != CommandFollowUp {
		return fmt.Errorf("send %s to run %s: not a message", kind, runID)
	}
	payload, err := json.Marshal(text)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		if limit > 0 {
			// The run's row lock orders the senders: two cannot both
			// take the last place.
			var unread int
			err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM run_commands c WHERE c.run_id = r.id
					AND c.read_at IS NULL AND c.kind IN ('steer', 'follow_up'))
				FROM runs r WHERE r.id = $1 FOR UPDATE`, runID).Scan(&unread)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrRunEnded
			}
			if err != nil {
				return err
			}
			if unread >= limit {
				return ErrQueueFull
			}
		}
		return sendTx(ctx, tx, runID, kind, payload)
	})
	if err != nil {
		return fmt.Errorf("send %s to run %s: %w", kind, runID, err)
	}
	return nil
}

// MarkRead records that run runID read the oldest steer or follow-up
// message delivered to it and not yet read, making room for another
// (SendMessage); with none it does nothing.
func (n *Node) MarkRead(ctx context.Context, runID string) error {
	_, err := n.pool.Exec(ctx, `UPDATE run_commands SET read_at = now() WHERE id = (
		SELECT id FROM run_commands WHERE run_id = $1 AND read_at IS NULL AND kind IN ('steer', 'follow_up')
			AND consumed_at IS NOT NULL ORDER BY id LIMIT 1)`, runID)
	if err != nil {
		return fmt.Errorf("mark a message of run %s read: %w", runID, err)
	}
	return nil
}

func sendTx(ctx context.Context, tx pgx.Tx, runID, kind string, payload json.RawMessage) error {
	var owner *string
	err := tx.QueryRow(ctx, `SELECT owner FROM runs WHERE id = $1 AND status IN ('queued', 'running', 'requires_action')`,
		runID).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrRunEnded
	}
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO run_commands (run_id, kind, payload) VALUES ($1, $2, $3)`, runID, kind, jsonArg(payload)); err != nil {
		return err
	}
	if kind == CommandAbort {
		if _, err := tx.Exec(ctx, `UPDATE runs SET cancel_requested_at = now() WHERE id = $1`, runID); err != nil {
			return err
		}
	}
	if owner != nil {
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, chanCmd, *owner)
	}
	return err
}

// deliverCommands hands the unconsumed commands of this node's claims to
// them, marking them consumed under each claim's lease (a node that lost
// the lease consumes nothing, so the new owner gets them).
func (n *Node) deliverCommands(ctx context.Context) {
	// The heartbeat and the listener both deliver: one at a time keeps
	// each claim's commands in order.
	n.deliverMu.Lock()
	defer n.deliverMu.Unlock()
	for _, c := range n.active() {
		var cmds []Command
		err := n.fenced(ctx, c, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `UPDATE run_commands SET consumed_at = now()
				WHERE run_id = $1 AND consumed_at IS NULL RETURNING id, kind, payload::text`, c.Run.ID)
			if err != nil {
				return err
			}
			var cmd Command
			var p *string
			_, err = pgx.ForEachRow(rows, []any{&cmd.ID, &cmd.Kind, &p}, func() error {
				cmd.RunID, cmd.Payload = c.Run.ID, nil
				if p != nil {
					cmd.Payload = json.RawMessage(*p)
				}
				cmds = append(cmds, cmd)
				return nil
			})
			return err
		})
		if err != nil {
			continue // the next heartbeat or notification tries again
		}
		slices.SortFunc(cmds, func(a, b Command) int { return int(a.ID - b.ID) })
		var later []int64
		for _, cmd := range cmds {
			select {
			case c.cmds <- cmd:
			default:
				// The run has not read what it was given yet: this one
				// waits in the table for the next delivery instead of
				// stalling the node, or being lost (an approval's answer
				// lost would leave the run waiting for it).
				if cmd.Kind != CommandAbort {
					later = append(later, cmd.ID)
				}
			}
			if cmd.Kind == CommandAbort {
				c.cancel(ErrAbortRequested)
			}
		}
		if len(later) > 0 {
			_ = n.fenced(ctx, c, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE run_commands SET consumed_at = NULL WHERE id = ANY($1)`, later)
				return err
			})
		}
	}
}

// ErrAlreadyResolved says an approval was answered before (HTTP 409).
var ErrAlreadyResolved = errors.New("the action was already resolved")

// ErrNoAction says no pending action has the id.
var ErrNoAction = errors.New("no such pending action")

// RequestAction records that c's run waits for a decision on action id
// (an approval) and marks the run requires_action, under c's lease. The
// decision arrives as a CommandApproval on c.Commands, from whichever node
// answered it; a new owner after a takeover gets the decisions not yet
// delivered, and PendingActions lists the unanswered ones.
func (n *Node) RequestAction(ctx context.Context, c *Claim, id string, request json.RawMessage) error {
	err := n.fenced(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO pending_actions (id, run_id, session_id, request) VALUES ($1, $2, $3, $4)`,
			id, c.Run.ID, c.Run.SessionID, jsonArg(request)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE runs SET status = 'requires_action' WHERE id = $1`, c.Run.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("request action %s: %w", id, err)
	}
	return nil
}

// Resolve answers a pending action from any node. The first answer wins;
// a later one gets ErrAlreadyResolved. It returns the run's id.
func (n *Node) Resolve(ctx context.Context, id string, decision json.RawMessage) (string, error) {
	var runID string
	err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE pending_actions SET decision = $2, resolved_at = now()
			WHERE id = $1 AND resolved_at IS NULL RETURNING run_id`, id, jsonArg(decision)).Scan(&runID)
		if errors.Is(err, pgx.ErrNoRows) {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM pending_actions WHERE id = $1`, id).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return ErrAlreadyResolved
			}
			return ErrNoAction
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET status = 'running' WHERE id = $1 AND status = 'requires_action'
			AND NOT EXISTS (SELECT 1 FROM pending_actions WHERE run_id = $1 AND resolved_at IS NULL)`, runID); err != nil {
			return err
		}
		payload, err := json.Marshal(ApprovalPayload{ActionID: id, Decision: decision})
		if err != nil {
			return err
		}
		return sendTx(ctx, tx, runID, CommandApproval, payload)
	})
	if err != nil {
		return "", fmt.Errorf("resolve action %s: %w", id, err)
	}
	return runID, nil
}

// PendingAction is an action waiting for a decision.
type PendingAction struct {
	ID, RunID, SessionID string
	Request              json.RawMessage
}

// PendingActions lists the unanswered actions of a run, for a new owner
// after a takeover and for clients asking what waits on them.
func (n *Node) PendingActions(ctx context.Context, runID string) ([]PendingAction, error) {
	rows, err := n.pool.Query(ctx, `SELECT id, run_id, session_id, request::text FROM pending_actions
		WHERE run_id = $1 AND resolved_at IS NULL ORDER BY created_at, id`, runID)
	if err != nil {
		return nil, fmt.Errorf("list the pending actions of run %s: %w", runID, err)
	}
	var out []PendingAction
	var a PendingAction
	var req *string
	_, err = pgx.ForEachRow(rows, []any{&a.ID, &a.RunID, &a.SessionID, &req}, func() error {
		a.Request = nil
		if req != nil {
			a.Request = json.RawMessage(*req)
		}
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the pending actions of run %s: %w", runID, err)
	}
	return out, nil
}

// PendingEvents returns, in seq order, the stored events of type typ that
// asked for the unanswered actions of a session (of run runID when it is
// not ""): those whose data field idField names an action's id. A node
// re-sends them to a client that subscribes after they went out, whichever
// node holds the run.
func (n *Node) PendingEvents(ctx context.Context, sessionID, runID, typ, idField string) ([]Event, error) {
	rows, err := n.pool.Query(ctx, `SELECT e.session_id, e.seq, coalesce(e.run_id, ''), e.type, e.data::text, e.created_at
		FROM pending_actions p JOIN session_events e ON e.session_id = p.session_id AND e.type = $3
			AND e.run_id = p.run_id AND e.data->>$4 = p.id
		WHERE p.session_id = $1 AND p.resolved_at IS NULL AND ($2 = '' OR p.run_id = $2)
		ORDER BY e.seq`, sessionID, runID, typ, idField)
	if err != nil {
		return nil, fmt.Errorf("read the pending requests of session %s: %w", sessionID, err)
	}
	return scanEvents(rows, sessionID)
}
