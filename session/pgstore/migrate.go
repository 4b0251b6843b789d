package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrateLock is the advisory lock key under which every node migrates:
// the first to start applies the steps, the others wait and find them
// applied.
const migrateLock = 0x616c6d67 // "almg"

// Migrate applies the steps of component not applied yet, in order, in one
// transaction: all of them or none. Step i (from 0) is version i+1 of the
// component; a step once released is never changed, only followed.
func Migrate(ctx context.Context, pool *pgxpool.Pool, component string, steps []string) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			component text NOT NULL, version int NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(),
			PRIMARY KEY (component, version))`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations WHERE component = $1`,
			component).Scan(&have); err != nil {
			return err
		}
		if have > len(steps) {
			return fmt.Errorf("the database is at version %d of %s, newer than this program (%d): upgrade it", have, component, len(steps))
		}
		for v := have + 1; v <= len(steps); v++ {
			if _, err := tx.Exec(ctx, steps[v-1]); err != nil {
				return fmt.Errorf("step %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (component, version) VALUES ($1, $2)`, component, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate %s: %w", component, err)
	}
	return nil
}

// steps is the schema of the session store, one entry per version.
var steps = []string{
	`CREATE TABLE sessions (
		id text PRIMARY KEY,
		cwd text NOT NULL,
		header json,                -- NULL until the first user message
		created_at timestamptz NOT NULL DEFAULT now(),
		updated_at timestamptz NOT NULL DEFAULT now(),
		owner text,                 -- the lease: who may write
		epoch bigint NOT NULL DEFAULT 0,
		lease_expires timestamptz   -- NULL with an owner: held until released
	);
	CREATE INDEX sessions_cwd ON sessions (cwd, updated_at DESC);
	CREATE INDEX sessions_owner ON sessions (owner) WHERE owner IS NOT NULL;
	CREATE TABLE session_entries (
		session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		idx bigint NOT NULL,
		entry json NOT NULL,
		idem_key text,
		PRIMARY KEY (session_id, idx),
		UNIQUE (session_id, idem_key)
	);`,
}
