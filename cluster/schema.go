package cluster

// steps is the schema of the cluster layer, applied after the session
// store's (its tables reference sessions), one entry per version.
var steps = []string{
	`CREATE TABLE runs (
		id text PRIMARY KEY,
		session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		status text NOT NULL,       -- queued, running, requires_action, or how it ended
		input json,
		idem_key text UNIQUE,
		attempt int NOT NULL DEFAULT 0,
		owner text,
		created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		started_at timestamptz,
		ended_at timestamptz,
		cancel_requested_at timestamptz,
		result json
	);
	CREATE UNIQUE INDEX one_active_run ON runs (session_id) WHERE status IN ('running', 'requires_action');
	CREATE INDEX runs_claimable ON runs (created_at) WHERE status IN ('queued', 'running', 'requires_action');
	CREATE TABLE session_events (
		session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		seq bigint NOT NULL,
		run_id text,
		type text NOT NULL,
		data json,
		created_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (session_id, seq)
	);
	CREATE TABLE run_commands (
		id bigserial PRIMARY KEY,
		run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
		kind text NOT NULL,
		payload json,
		created_at timestamptz NOT NULL DEFAULT now(),
		consumed_at timestamptz
	);
	CREATE INDEX run_commands_open ON run_commands (run_id) WHERE consumed_at IS NULL;
	CREATE TABLE pending_actions (
		id text PRIMARY KEY,
		run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
		session_id text NOT NULL,
		request json,
		decision json,
		created_at timestamptz NOT NULL DEFAULT now(),
		resolved_at timestamptz
	);`,
	// An idempotency key names a run of its session, not of the whole
	// cluster: two clients' sessions may use the same key.
	`ALTER TABLE runs DROP CONSTRAINT runs_idem_key_key;
	CREATE UNIQUE INDEX runs_session_idem_key ON runs (session_id, idem_key);`,
	// base_entries: how many entries the session had when the run's first
	// attempt began; a takeover finds what the run wrote after them.
	`ALTER TABLE runs ADD COLUMN base_entries int;`,
	// idem_body: the fingerprint of the request that queued the run, so a
	// reused idempotency key with another body is refused on any node.
	`ALTER TABLE runs ADD COLUMN idem_body text;`,
	// Events found by type (the request of each pending action, for a
	// client that subscribes on another node) without reading every delta.
	`CREATE INDEX session_events_type ON session_events (session_id, type);`,
	// read_at: when the run read a steer or follow-up message (its user
	// message_start), so a sender on any node finds how many are unread
	// (SendMessage's bound).
	`ALTER TABLE run_commands ADD COLUMN read_at timestamptz;
	CREATE INDEX run_commands_unread ON run_commands (run_id) WHERE read_at IS NULL AND kind IN ('steer', 'follow_up');`,
}
