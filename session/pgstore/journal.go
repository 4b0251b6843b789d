package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// journal persists one open session's entries under its lease: every
// write names the owner and epoch the lease was taken at, in the same
// statement, and writes nothing once they no longer match.
type journal struct {
	st      *Store
	id      string
	epoch   int64
	release bool // Close gives the lease back (not for a cluster's lease)

	mu      sync.Mutex
	next    int64 // idx of the next entry
	created bool  // the header is persisted
	unsure  bool  // the last write failed after it may have been committed
	closed  bool
}

// Epoch returns the epoch of the lease the session writes under.
func (j *journal) Epoch() int64 { return j.epoch }

// Create persists the header and the first entries, fenced.
func (j *journal) Create(ctx context.Context, h session.Header, entries []session.Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	hdr, err := llm.MarshalJSON(h)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, j.st.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE sessions SET header = $4, cwd = $5, updated_at = now()
			WHERE id = $1 AND owner = $2 AND epoch = $3 AND header IS NULL`, j.id, j.st.owner, j.epoch, string(hdr), h.Cwd)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrFenced
		}
		return insertEntries(ctx, tx, j.id, 0, entries)
	})
	if err != nil {
		return err
	}
	j.created, j.next = true, int64(len(entries))
	return nil
}

// Append persists e as entry j.next, in one statement that also checks
// the lease and touches the session's updated_at.
func (j *journal) Append(ctx context.Context, e session.Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.unsure {
		// The previous append failed in a way that may have committed
		// it: if it did, memory lacks an entry the database holds.
		var n int64
		if err := j.st.pool.QueryRow(ctx, `SELECT count(*) FROM session_entries WHERE session_id = $1 AND idx = $2`,
			j.id, j.next).Scan(&n); err != nil {
			return fmt.Errorf("check the last append: %w", err)
		}
		if n > 0 {
			return errors.New("an append whose outcome was unknown (the database connection failed) was committed after all; reopen the session to continue from what the database holds")
		}
		j.unsure = false
	}
	line, err := llm.MarshalJSON(e)
	if err != nil {
		return fmt.Errorf("encode %s entry: %w", e.Type, err)
	}
	tag, err := j.st.pool.Exec(ctx, `
		WITH lease AS (
			UPDATE sessions SET updated_at = now() WHERE id = $1 AND owner = $2 AND epoch = $3 RETURNING id
		)
		INSERT INTO session_entries (session_id, idx, entry, idem_key)
		SELECT id, $4, $5, $6 FROM lease`, j.id, j.st.owner, j.epoch, j.next, string(line), nullable(e.IdemKey))
	if err != nil {
		if !pgconn.SafeToRetry(err) && !isServerError(err) {
			j.unsure = true
		}
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrFenced
	}
	j.next++
	return nil
}

// isServerError says the server answered with an error: the statement
// did not commit.
func isServerError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// Release gives the lease back (a Lock's release).
func (j *journal) Release() error { return j.Close() }

// Close gives the lease back, unless it is a cluster's; a session that
// never got its first user message is deleted.
func (j *journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed || !j.release {
		j.closed = true
		return nil
	}
	j.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if j.created {
		_, err = j.st.pool.Exec(ctx, `UPDATE sessions SET owner = NULL, lease_expires = NULL
			WHERE id = $1 AND owner = $2 AND epoch = $3`, j.id, j.st.owner, j.epoch)
	} else {
		_, err = j.st.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1 AND owner = $2 AND epoch = $3 AND header IS NULL`,
			j.id, j.st.owner, j.epoch)
	}
	if err != nil {
		return fmt.Errorf("release session %s: %w", j.id, err)
	}
	return nil
}
