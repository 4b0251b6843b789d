package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentloop/agentloop/session"
)

// Run statuses. A run is active (the one_active_run index allows one per
// session) while running or waiting for an approval.
const (
	StatusQueued         = "queued"
	StatusRunning        = "running"
	StatusRequiresAction = "requires_action"
)

// Run is a queued or claimed run.
type Run struct {
	ID        string
	SessionID string
	Status    string
	Input     json.RawMessage
	// Attempt counts claims: 1 for the first, 2 after a takeover, ...
	Attempt int
	// Base is how many entries the session had when the run began
	// (SetBase); -1 when none was recorded.
	Base int
}

// EnqueueOptions describe a run to queue.
type EnqueueOptions struct {
	// SessionID is the session the run continues, created (without a
	// header until its first user message) if it does not exist.
	SessionID string
	// Cwd is the new session's working directory.
	Cwd   string
	Input json.RawMessage
	// IdemKey, when set, makes the enqueue idempotent: a second run of
	// the session with the same key is not queued, and Enqueue returns the
	// first one's id. Keys of other sessions do not count.
	IdemKey string
	// Body, with IdemKey, is the fingerprint of the request (a hash of what
	// it asks for): a later enqueue with the same key and another Body is
	// refused with ErrIdemKeyReused, whichever node queued the first.
	Body string
}

// IdemKeyReusedError says an idempotency key was used before, for RunID,
// with another body (HTTP 422).
type IdemKeyReusedError struct{ RunID string }

func (e *IdemKeyReusedError) Error() string {
	return "the idempotency key was used for run " + e.RunID + " with another body"
}

// ErrIdemKeyReused matches an *IdemKeyReusedError with errors.Is.
var ErrIdemKeyReused = errors.New("idempotency key reused with another body")

func (e *IdemKeyReusedError) Is(target error) bool { return target == ErrIdemKeyReused }

// Enqueue queues a run for any node to claim, and reports whether it was
// new (false: a run with the same IdemKey was queued before). A key used
// before with another Body gets an *IdemKeyReusedError: of two enqueues
// racing with one key, the database's unique index lets one insert, and
// the other compares its body with the winner's.
func (n *Node) Enqueue(ctx context.Context, o EnqueueOptions) (runID string, created bool, err error) {
	if o.SessionID == "" {
		return "", false, errors.New("enqueue: no session id")
	}
	runID = session.NewSessionID()
	err = pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sessions (id, cwd) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
			o.SessionID, o.Cwd); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO runs (id, session_id, status, input, idem_key, idem_body) VALUES ($1, $2, 'queued', $3, $4, $5)
			ON CONFLICT (session_id, idem_key) DO NOTHING RETURNING id`, runID, o.SessionID, jsonArg(o.Input), nullable(o.IdemKey),
			nullable(o.Body)).Scan(&runID)
		if errors.Is(err, pgx.ErrNoRows) {
			// The conflicting insert has committed (ON CONFLICT waits for
			// it): its row is there to compare with.
			var body *string
			if err := tx.QueryRow(ctx, `SELECT id, idem_body FROM runs WHERE session_id = $1 AND idem_key = $2`,
				o.SessionID, o.IdemKey).Scan(&runID, &body); err != nil {
				return err
			}
			if body != nil && o.Body != "" && *body != o.Body {
				return &IdemKeyReusedError{RunID: runID}
			}
			return nil
		}
		if err != nil {
			return err
		}
		created = true
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, chanRuns, o.SessionID)
		return err
	})
	var reused *IdemKeyReusedError
	if errors.As(err, &reused) {
		return reused.RunID, false, err
	}
	if err != nil {
		return "", false, fmt.Errorf("enqueue a run of session %s: %w", o.SessionID, err)
	}
	return runID, created, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// jsonArg is raw as a json parameter: SQL NULL when empty.
func jsonArg(raw json.RawMessage) *string { return nullable(string(raw)) }

// Claim is a run this node holds, under the lease of its session taken
// at Epoch. Its context ends when the node must stop the run: the lease
// was lost or could not be renewed (ErrLeaseLost, ErrSelfFenced), an
// abort was asked for, or the node closed; context.Cause says which.
type Claim struct {
	Run   Run
	Epoch int64

	node    *Node
	ctx     context.Context
	cancel  context.CancelCauseFunc
	renewed atomic.Int64 // UnixNano of the last renewal known to have started
	cmds    chan Command
}

// Context is the run's context; see Claim.
func (c *Claim) Context() context.Context { return c.ctx }

// Commands delivers the commands sent to the run from any node, in the
// order they were sent.
func (c *Claim) Commands() <-chan Command { return c.cmds }

// Session opens the run's session for appending under this claim's
// lease: every append is fenced by Epoch.
func (c *Claim) Session(ctx context.Context) (*session.JournalSession, error) {
	return c.node.store.OpenLeased(ctx, c.Run.SessionID, c.Epoch)
}

// ErrAbortRequested is the cause of a claim's context when an abort
// command arrived.
var ErrAbortRequested = errors.New("the run was aborted")

// Claim takes the oldest run that can be taken: a queued run of a session
// with no active run, or an active run whose session lease expired (its
// node died or paused: a takeover). It returns nil, nil when there is
// none.
func (n *Node) Claim(ctx context.Context) (*Claim, error) {
	var c *Claim
	// The lease runs from the transaction's now(), which is no earlier
	// than this: the self-fence counts from here, never from later.
	start := n.cfg.Clock.Now()
	err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		var r Run
		var input []byte
		err := tx.QueryRow(ctx, `
			SELECT r.id, r.session_id, r.status, r.input::text, r.attempt, coalesce(r.base_entries, -1) FROM runs r JOIN sessions s ON s.id = r.session_id
			WHERE (r.status IN ('running', 'requires_action') AND (s.owner IS NULL OR s.lease_expires < now()))
			   OR (r.status = 'queued' AND (s.owner IS NULL OR s.lease_expires < now())
			       AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.session_id = r.session_id
			                       AND a.status IN ('running', 'requires_action')))
			ORDER BY r.created_at FOR UPDATE OF r SKIP LOCKED LIMIT 1`).Scan(&r.ID, &r.SessionID, &r.Status, &input, &r.Attempt, &r.Base)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if input != nil {
			r.Input = json.RawMessage(input)
		}
		var epoch int64
		err = tx.QueryRow(ctx, `UPDATE sessions SET owner = $2, epoch = epoch + 1,
				lease_expires = now() + $3::bigint * interval '1 millisecond'
			WHERE id = $1 AND (owner IS NULL OR lease_expires < now()) RETURNING epoch`,
			r.SessionID, n.id, n.cfg.LeaseTTL.Milliseconds()).Scan(&epoch)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // another node took the session meanwhile
		}
		if err != nil {
			return err
		}
		if r.Status == StatusQueued {
			r.Status = StatusRunning
		}
		r.Attempt++
		if _, err := tx.Exec(ctx, `UPDATE runs SET status = $2, attempt = $3, owner = $4, started_at = coalesce(started_at, now())
			WHERE id = $1`, r.ID, r.Status, r.Attempt, n.id); err != nil {
			return err
		}
		// The messages the previous owner was given and had not read
		// went with it: they no longer hold places (SendMessage).
		if _, err := tx.Exec(ctx, `UPDATE run_commands SET read_at = now()
			WHERE run_id = $1 AND consumed_at IS NOT NULL AND read_at IS NULL`, r.ID); err != nil {
			return err
		}
		c = &Claim{Run: r, Epoch: epoch, node: n, cmds: make(chan Command, 64)}
		return nil
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "one_active_run" {
			return nil, nil // the database kept the session to one active run
		}
		return nil, fmt.Errorf("claim a run: %w", err)
	}
	if c == nil {
		return nil, nil
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.renewed.Store(start.UnixNano())
	n.mu.Lock()
	n.claims[c.Run.ID] = c
	n.mu.Unlock()
	return c, nil
}

// WaitClaim claims a run, waiting for one to be queued (NOTIFY) or to
// become claimable (checked every Poll) until ctx ends.
func (n *Node) WaitClaim(ctx context.Context) (*Claim, error) {
	for {
		c, err := n.Claim(ctx)
		if c != nil || (err != nil && ctx.Err() != nil) {
			return c, err
		}
		wait, cancel := context.WithTimeout(ctx, n.cfg.Poll)
		select {
		case <-n.wakeRuns:
		case <-wait.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// Release ends a claimed run with status (completed, failed, aborted, ...)
// and result, and gives the session's lease back, unless the lease was
// lost: then nothing is written and the error is ErrFenced.
func (n *Node) Release(ctx context.Context, c *Claim, status string, result json.RawMessage) error {
	defer n.drop(c, context.Canceled)
	err := n.giveBack(ctx, c, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE runs SET status = $2, ended_at = now(), result = $3 WHERE id = $1`,
			c.Run.ID, status, jsonArg(result))
		return err
	})
	if err != nil {
		return fmt.Errorf("release run %s: %w", c.Run.ID, err)
	}
	return nil
}

// giveBack gives c's session lease back, runs also (when not nil) in the
// same transaction, and wakes the claimers: the session's run, or its next
// queued one, may be claimed. ErrFenced when the lease was not c's any
// more: nothing is written then.
func (n *Node) giveBack(ctx context.Context, c *Claim, also func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE sessions SET owner = NULL, lease_expires = NULL
			WHERE id = $1 AND owner = $2 AND epoch = $3`, c.Run.SessionID, n.id, c.Epoch)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrFenced
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, chanRuns, c.Run.SessionID)
		return err
	})
}

// ErrHandedOff is the cause of a claim's context when its node handed the
// run to the cluster (Handoff), as it shut down.
var ErrHandedOff = errors.New("this node shut down and handed the run to another node")

// Handoff gives c's session lease back without ending its run, for a node
// that shuts down with the run still going: the run stays active, and the
// next node to claim (woken at once, not after the lease would lapse) takes
// it over as after a crash (attempt + 1, resumed from the transcript, the
// call that was running settled as interrupted). c's context then ends
// with ErrHandedOff; what the run still tries to write is refused
// (ErrFenced), as the lease is no longer this node's. The context ends
// even when the database cannot be reached: the lease then lapses.
func (n *Node) Handoff(ctx context.Context, c *Claim) error {
	defer n.drop(c, ErrHandedOff)
	if err := n.giveBack(ctx, c, nil); err != nil {
		return fmt.Errorf("hand off run %s: %w", c.Run.ID, err)
	}
	return nil
}

// fenced runs f in a transaction that first locks the session's row and
// checks that c's lease still holds; ErrFenced when it does not.
func (n *Node) fenced(ctx context.Context, c *Claim, f func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 AND owner = $2 AND epoch = $3 FOR UPDATE`,
			c.Run.SessionID, n.id, c.Epoch).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrFenced
		}
		if err != nil {
			return err
		}
		return f(tx)
	})
}

// SetBase records, under c's lease, how many entries the session had
// before the run wrote any: after a takeover, what follows them is the
// run's (its prompt among them, when it was stored).
func (n *Node) SetBase(ctx context.Context, c *Claim, entries int) error {
	err := n.fenced(ctx, c, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE runs SET base_entries = $2 WHERE id = $1`, c.Run.ID, entries)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the start of run %s: %w", c.Run.ID, err)
	}
	c.Run.Base = entries
	return nil
}
