package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/session/pgstore"
)

// isPostgresURL says whether --store names a PostgreSQL database.
func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// openServeStore opens the session store of agentloop serve: the files
// under dir, or with --store postgres://… the database, whose schema is
// brought up to date first (pgstore.Migrate), joined as a node of the
// cluster on it (node non-nil: runs are queued there and claimed by any
// node). It returns the store, where it is (for the listening line,
// without a password) and what closes it.
func openServeStore(ctx context.Context, getenv func(string) string, spec, dir string) (session.Store, *cluster.Node, string, func(), error) {
	if spec == "" {
		return session.NewJSONLStore(dir), nil, dir, func() {}, nil
	}
	cfg, err := clusterConfig(getenv)
	if err != nil {
		return nil, nil, "", nil, usageError{err}
	}
	// The node's heartbeat renews the leases of its runs. A transaction
	// left open by a node that paused (SIGSTOP, a VM frozen) would hold
	// its session's row lock and block the takeover: PostgreSQL ends it
	// after a third of the lease.
	ttl := cfg.LeaseTTL
	if ttl <= 0 {
		ttl = cluster.DefaultLeaseTTL
	}
	st, at, closeDB, err := openPostgresStore(ctx, spec, 0, ttl/3)
	if err != nil {
		return nil, nil, "", nil, err
	}
	node, err := cluster.New(ctx, st, cfg)
	if err != nil {
		closeDB()
		return nil, nil, "", nil, exitError{code: exitFailed, msg: fmt.Sprintf("--store: %v", err)}
	}
	return node.SessionStore(), node, at, func() { node.Close(); closeDB() }, nil
}

// The environment variables that set the cluster's timings (tests use
// short ones; the defaults are cluster.Config's): durations such as 2s.
const (
	envLeaseTTL  = "AGENTLOOP_CLUSTER_LEASE_TTL"
	envHeartbeat = "AGENTLOOP_CLUSTER_HEARTBEAT"
	envSelfFence = "AGENTLOOP_CLUSTER_SELF_FENCE"
	envPoll      = "AGENTLOOP_CLUSTER_POLL"
	// envRetention is how long the stored events of ended runs are kept
	// (a duration, or off); envEventsKept how many of each session's last
	// events are kept whatever their age.
	envRetention  = "AGENTLOOP_CLUSTER_EVENT_RETENTION"
	envEventsKept = "AGENTLOOP_CLUSTER_EVENTS_KEPT"
	// envDrain bounds how long a node that is stopping (SIGTERM) lets its
	// runs finish before it hands the rest to another node.
	envDrain = "AGENTLOOP_CLUSTER_DRAIN"
)

// serveDrain is how long serve's runs may finish at exit: serveShutdown,
// or on a cluster AGENTLOOP_CLUSTER_DRAIN when set (no longer than
// serveShutdown).
func serveDrain(getenv func(string) string, node *cluster.Node) (time.Duration, error) {
	s := getenv(envDrain)
	if node == nil || s == "" {
		return serveShutdown, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, usageError{fmt.Errorf("%s=%q: give a duration such as 2s", envDrain, s)}
	}
	return min(d, serveShutdown), nil
}

// clusterConfig reads the cluster's timings from the environment.
func clusterConfig(getenv func(string) string) (*cluster.Config, error) {
	cfg := &cluster.Config{}
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{envLeaseTTL, &cfg.LeaseTTL}, {envHeartbeat, &cfg.Heartbeat}, {envSelfFence, &cfg.SelfFence}, {envPoll, &cfg.Poll}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s=%q: give a positive duration such as 2s", v.name, s)
		}
		*v.to = d
	}
	switch v := getenv(envRetention); v {
	case "":
	case "off":
		cfg.EventRetention = -1
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s=%q: give a positive duration such as 24h, or off", envRetention, v)
		}
		cfg.EventRetention = d
	}
	if v := getenv(envEventsKept); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			return nil, fmt.Errorf("%s=%q: give a number of events, at least 1", envEventsKept, v)
		}
		cfg.EventsKept = k
	}
	// A lease given alone sets the others in the default proportions.
	if cfg.LeaseTTL > 0 && cfg.Heartbeat == 0 {
		cfg.Heartbeat = cfg.LeaseTTL / 3
	}
	if cfg.LeaseTTL > 0 && cfg.SelfFence == 0 {
		cfg.SelfFence = cfg.LeaseTTL * 2 / 3
	}
	return cfg, nil
}

// openPostgresStore opens the sessions in the database at url, its schema
// brought up to date; with idleTx a transaction left idle that long is
// ended by the server. With a lease TTL the leases it takes are renewed
// until it is closed: the sessions a process holds stay its own while it
// lives, and another can open them ttl after it died.
func openPostgresStore(ctx context.Context, spec string, ttl, idleTx time.Duration) (*pgstore.Store, string, func(), error) {
	if !isPostgresURL(spec) {
		return nil, "", nil, usageError{fmt.Errorf("--store %q: give a postgres:// URL (the file store is the default)", spec)}
	}
	pcfg, err := pgxpool.ParseConfig(spec)
	if err != nil {
		return nil, "", nil, usageError{fmt.Errorf("--store: %w", err)}
	}
	if _, set := pcfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; idleTx > 0 && !set {
		pcfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(idleTx.Milliseconds(), 10)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
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
