package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/session/pgstore"
)

// isPostgresURL says whether --store names a PostgreSQL database.
func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// openServeStore opens the session store of agentloop serve: the files
// under dir, or with --store postgres://… the database, whose schema is
// brought up to date first (pgstore.Migrate). It returns the store, where
// it is (for the listening line, without a password) and what closes it.
func openServeStore(ctx context.Context, spec, dir string) (session.Store, string, func(), error) {
	if spec == "" {
		return session.NewJSONLStore(dir), dir, func() {}, nil
	}
	return openPostgresStore(ctx, spec, serveLeaseTTL)
}

// openPostgresStore opens the sessions in the database at url, its schema
// brought up to date. With a lease TTL the leases it takes are renewed
// until it is closed: the sessions a process holds stay its own while it
// lives, and another can open them ttl after it died.
func openPostgresStore(ctx context.Context, spec string, ttl time.Duration) (*pgstore.Store, string, func(), error) {
	if !isPostgresURL(spec) {
		return nil, "", nil, usageError{fmt.Errorf("--store %q: give a postgres:// URL (the file store is the default)", spec)}
	}
	pool, err := pgxpool.New(ctx, spec)
	if err != nil {
		return nil, "", nil, usageError{fmt.Errorf("--store: %w", err)}
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, "", nil, exitError{code: exitFailed, msg: fmt.Sprintf("--store: connect to PostgreSQL: %v", err)}
	}
	st, err := pgstore.New(ctx, pool, &pgstore.Config{LeaseTTL: ttl})
	if err != nil {
		pool.Close()
		return nil, "", nil, exitError{code: exitFailed, msg: fmt.Sprintf("--store: %v", err)}
	}
	if ttl <= 0 {
		return st, redactURL(spec), pool.Close, nil
	}
	kctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	kept := make(chan struct{})
	go func() { st.KeepLeases(kctx, ttl/3); close(kept) }()
	return st, redactURL(spec), func() { stop(); <-kept; pool.Close() }, nil
}

// serveLeaseTTL is how long a session stays held by a server that stopped
// renewing (it died): the cluster's default lease.
const serveLeaseTTL = 15 * time.Second

// redactURL drops the password of a database URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "postgres://…"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
