package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event is one stored event of a session. Seq grows by one per event of
// the session, whichever node wrote it.
type Event struct {
	SessionID string
	Seq       int64
	RunID     string
	Type      string
	Data      json.RawMessage
	Created   time.Time
}

// AppendEvent stores an event of c's run with the session's next seq,
// under c's lease (ErrFenced once it is lost, and nothing is stored), and
// wakes the nodes following the session.
func (n *Node) AppendEvent(ctx context.Context, c *Claim, typ string, data json.RawMessage) (int64, error) {
	return n.AppendEventSeq(ctx, c, typ, func(int64) []byte { return data })
}

// AppendEventSeq is AppendEvent for an event whose data carries its own
// seq: mk is called with the seq the event gets, inside the transaction
// that stores it.
func (n *Node) AppendEventSeq(ctx context.Context, c *Claim, typ string, mk func(seq int64) []byte) (int64, error) {
	var seq int64
	err := n.fenced(ctx, c, func(tx pgx.Tx) error {
		// The session's row is locked by fenced: one writer at a time.
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) + 1 FROM session_events WHERE session_id = $1`,
			c.Run.SessionID).Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO session_events (session_id, seq, run_id, type, data) VALUES ($1, $2, $3, $4, $5)`,
			c.Run.SessionID, seq, c.Run.ID, typ, jsonArg(mk(seq))); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, chanEvents, c.Run.SessionID+":"+strconv.FormatInt(seq, 10))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store a %s event of session %s: %w", typ, c.Run.SessionID, err)
	}
	return seq, nil
}

// Events returns the events of a session after seq after, in order, at
// most limit of them (0: all).
func (n *Node) Events(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error) {
	q := `SELECT session_id, seq, coalesce(run_id, ''), type, data::text, created_at FROM session_events
		WHERE session_id = $1 AND seq > $2 ORDER BY seq`
	args := []any{sessionID, after}
	if limit > 0 {
		q += ` LIMIT $3`
		args = append(args, limit)
	}
	rows, err := n.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read the events of session %s: %w", sessionID, err)
	}
	return scanEvents(rows, sessionID)
}

// scanEvents reads rows of (session_id, seq, run_id, type, data, created_at).
func scanEvents(rows pgx.Rows, sessionID string) ([]Event, error) {
	var out []Event
	var e Event
	var data *string
	_, err := pgx.ForEachRow(rows, []any{&e.SessionID, &e.Seq, &e.RunID, &e.Type, &data, &e.Created}, func() error {
		e.Data = nil
		if data != nil {
			e.Data = json.RawMessage(*data)
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the events of session %s: %w", sessionID, err)
	}
	return out, nil
}

// WaitEvents returns the events of a session after seq after, waiting
// for at least one (woken by NOTIFY, or every Poll) until ctx ends.
func (n *Node) WaitEvents(ctx context.Context, sessionID string, after int64) ([]Event, error) {
	wake := make(chan struct{}, 1)
	n.mu.Lock()
	n.tails[sessionID] = append(n.tails[sessionID], wake)
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		list := n.tails[sessionID]
		for i, ch := range list {
			if ch == wake {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(n.tails, sessionID)
		} else {
			n.tails[sessionID] = list
		}
	}()
	for {
		evs, err := n.Events(ctx, sessionID, after, 0)
		if len(evs) > 0 || (err != nil && ctx.Err() != nil) {
			return evs, err
		}
		wait, cancel := context.WithTimeout(ctx, n.cfg.Poll)
		select {
		case <-wake:
		case <-wait.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (n *Node) wakeTails(sessionID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ch := range n.tails[sessionID] {
		signal(ch)
	}
}

// LastEvent returns the data of the last stored event of type typ of a
// run (its run_end, say); ok is false when there is none.
func (n *Node) LastEvent(ctx context.Context, runID, typ string) (data json.RawMessage, ok bool, err error) {
	var d *string
	err = n.pool.QueryRow(ctx, `SELECT data::text FROM session_events WHERE run_id = $1 AND type = $2 ORDER BY seq DESC LIMIT 1`,
		runID, typ).Scan(&d)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the %s of run %s: %w", typ, runID, err)
	}
	if d != nil {
		data = json.RawMessage(*d)
	}
	return data, true, nil
}
