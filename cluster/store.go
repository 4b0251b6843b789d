package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/session/pgstore"
)

// SessionStore is the store a runner on this node writes through: a
// session that one of the node's claims holds opens (or is created) under
// that claim's lease, so every append of the run is fenced by the claim's
// epoch; any other session goes to the Postgres store as usual.
func (n *Node) SessionStore() session.Store { return leasedStore{Store: n.store, n: n} }

type leasedStore struct {
	*pgstore.Store
	n *Node
}

// claimOf returns the node's claim on session id, if it holds one.
func (n *Node) claimOf(id string) *Claim {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.claims {
		if c.Run.SessionID == id {
			return c
		}
	}
	return nil
}

// A session opened outside a claim (a compaction on a node that does not
// run the session, a subagent delivery) takes a lease of LeaseTTL, which
// the node's heartbeat renews while it is open: a node that dies with it
// open leaves a lease that expires, so another node can claim the session
// LeaseTTL later.
func (l leasedStore) Open(ctx context.Context, id string, opts *session.LockOptions) (session.Session, error) {
	if c := l.n.claimOf(id); c != nil {
		return c.Session(ctx)
	}
	sess, err := l.n.ttlStore.Open(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	return &heldSession{Session: sess, done: l.n.holdLease()}, nil
}

func (l leasedStore) Create(ctx context.Context, opts session.CreateOptions) (session.Session, error) {
	if c := l.n.claimOf(opts.ID); opts.ID != "" && c != nil {
		// Enqueue made the session's row; the claim leased it: the run
		// starts it under that lease.
		return c.Session(ctx)
	}
	sess, err := l.n.ttlStore.Create(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &heldSession{Session: sess, done: l.n.holdLease()}, nil
}

func (l leasedStore) Lock(ctx context.Context, id string, opts *session.LockOptions) (session.Lock, error) {
	lk, err := l.n.ttlStore.Lock(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	return &heldLock{Lock: lk, done: l.n.holdLease()}, nil
}

// holdLease counts a lease taken outside a claim, so the heartbeat renews
// leases while one is held; the function it returns, called once, ends it.
func (n *Node) holdLease() func() {
	n.held.Add(1)
	var once sync.Once
	return func() { once.Do(func() { n.held.Add(-1) }) }
}

// heldSession is a session opened outside a claim: closing it ends the
// node's renewal of its lease.
type heldSession struct {
	session.Session
	done func()
}

func (h *heldSession) Close() error {
	defer h.done()
	return h.Session.Close()
}

type heldLock struct {
	session.Lock
	done func()
}

func (h *heldLock) Release() error {
	defer h.done()
	return h.Lock.Release()
}

// Declare records session id, working in cwd, before its first run, so
// every node knows it (its transcript starts with that run). A session
// the database has already is left as it is.
func (n *Node) Declare(ctx context.Context, id, cwd string) error {
	if _, err := n.pool.Exec(ctx, `INSERT INTO sessions (id, cwd) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, id, cwd); err != nil {
		return fmt.Errorf("declare session %s: %w", id, err)
	}
	return nil
}

// Declared returns the working directory of a session the database
// knows, with or without a transcript; ok is false when it knows none.
func (n *Node) Declared(ctx context.Context, id string) (cwd string, ok bool, err error) {
	err = n.pool.QueryRow(ctx, `SELECT cwd FROM sessions WHERE id = $1`, id).Scan(&cwd)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("find session %s: %w", id, err)
	}
	return cwd, true, nil
}

// RunRecord is a run as the database has it.
type RunRecord struct {
	ID, SessionID, Status string
	Attempt               int
	Owner                 string
	CreatedAt             time.Time
	StartedAt, EndedAt    time.Time // zero when not yet
}

// RunRecord returns run id as stored; ok is false when there is none.
func (n *Node) RunRecord(ctx context.Context, id string) (r RunRecord, ok bool, err error) {
	var started, ended *time.Time
	var owner *string
	err = n.pool.QueryRow(ctx, `SELECT id, session_id, status, attempt, owner, created_at, started_at, ended_at FROM runs WHERE id = $1`, id).
		Scan(&r.ID, &r.SessionID, &r.Status, &r.Attempt, &owner, &r.CreatedAt, &started, &ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("read run %s: %w", id, err)
	}
	if started != nil {
		r.StartedAt = started.UTC()
	}
	if ended != nil {
		r.EndedAt = ended.UTC()
	}
	if owner != nil {
		r.Owner = *owner
	}
	r.CreatedAt = r.CreatedAt.UTC()
	return r, true, nil
}

// Busy reports whether another writer has session id now: a run active
// on it (runID names it), or its lease held by someone other than this
// node. A node refuses to delete or compact a session that is busy; the
// store's own fencing (Delete and Open refuse a held lease) keeps a race
// with a claim that starts after the check from doing harm.
func (n *Node) Busy(ctx context.Context, id string) (runID string, busy bool, err error) {
	var run, owner *string
	err = n.pool.QueryRow(ctx, `SELECT (SELECT r.id FROM runs r WHERE r.session_id = s.id AND r.status IN ('running', 'requires_action') LIMIT 1),
			CASE WHEN s.lease_expires IS NULL OR s.lease_expires > now() THEN s.owner END
		FROM sessions s WHERE s.id = $1`, id).Scan(&run, &owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("find what holds session %s: %w", id, err)
	}
	if run != nil {
		return *run, true, nil
	}
	return "", owner != nil && *owner != n.id, nil
}
