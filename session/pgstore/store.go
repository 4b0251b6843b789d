package pgstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// ErrFenced says a write was refused because this process no longer holds
// the session's lease: another node took it over (after this one paused or
// lost the database for longer than the lease), or it was released.
// Nothing was written; the run that got it stops without writing more.
var ErrFenced = errors.New("the session's lease is held by another node now; nothing was written")

// Config configures a Store; nil means the defaults.
type Config struct {
	// Owner names this process in the leases it takes; "" means
	// "<hostname>/<pid>/<random>". Nodes of a cluster must differ.
	Owner string
	// LeaseTTL is how long a lease taken by Create, Open or Lock lasts
	// unless renewed (package cluster renews them); 0 means until the
	// session is closed, as the file lock is held.
	LeaseTTL time.Duration
}

// Store is a session.Store in PostgreSQL.
type Store struct {
	pool  *pgxpool.Pool
	owner string
	ttl   time.Duration
}

var _ session.Store = (*Store)(nil)

// New returns a store on pool, after bringing the schema up to date
// (Migrate). The pool stays the caller's to close.
func New(ctx context.Context, pool *pgxpool.Pool, cfg *Config) (*Store, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	s := &Store{pool: pool, owner: cfg.Owner, ttl: cfg.LeaseTTL}
	if s.owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		s.owner = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if err := Migrate(ctx, pool, "session", steps); err != nil {
		return nil, err
	}
	return s, nil
}

// WithLeaseTTL returns a store on the same pool and owner whose leases
// last ttl unless renewed (0: until closed). Package cluster opens the
// sessions a node works on outside its claims (a compaction) through it,
// so a node that dies meanwhile leaves a lease that expires.
func (s *Store) WithLeaseTTL(ttl time.Duration) *Store {
	c := *s
	c.ttl = ttl
	return &c
}

// Owner returns the name this store takes leases under.
func (s *Store) Owner() string { return s.owner }

// Pool returns the connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// ttlMillis is the lease length for SQL; 0 means no expiry.
func (s *Store) ttlMillis() int64 {
	if s.ttl > 0 {
		return max(1, s.ttl.Milliseconds())
	}
	return 0
}

// leaseExpiry is the SQL of a new lease's expiry from parameter $n.
func leaseExpiry(n int) string {
	return fmt.Sprintf("CASE WHEN $%d::bigint > 0 THEN now() + $%d::bigint * interval '1 millisecond' END", n, n)
}

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Create starts a new session and takes its lease. Its row holds no
// header until the first user message, so Load and List do not see it.
func (s *Store) Create(ctx context.Context, opts session.CreateOptions) (session.Session, error) {
	h, err := session.NewHeader(opts)
	if err != nil {
		return nil, err
	}
	var epoch int64
	err = s.pool.QueryRow(ctx, `
		INSERT INTO sessions (id, cwd, owner, epoch, lease_expires) VALUES ($1, $2, $3, 1, `+leaseExpiry(4)+`)
		ON CONFLICT (id) DO UPDATE SET cwd = EXCLUDED.cwd, owner = EXCLUDED.owner,
			epoch = sessions.epoch + 1, lease_expires = EXCLUDED.lease_expires, created_at = now()
		WHERE sessions.header IS NULL AND (sessions.owner IS NULL OR sessions.lease_expires < now())
		RETURNING epoch`, h.ID, h.Cwd, s.owner, s.ttlMillis()).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("create session %s: it already exists; open it instead", h.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("create session %s: %w", h.ID, err)
	}
	return session.NewJournalSession(h, nil, &journal{st: s, id: h.ID, epoch: epoch, release: true}), nil
}

// Open takes the lease of a session (given its id or a unique prefix of
// it) and opens it for appending from its last entry.
func (s *Store) Open(ctx context.Context, id string, opts *session.LockOptions) (session.Session, error) {
	j, err := s.lease(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	sess, err := s.openAt(ctx, id, j)
	if err != nil {
		j.Close()
		return nil, err
	}
	return sess, nil
}

// OpenLeased opens a session whose lease this store's owner already holds
// at epoch (package cluster takes leases when it claims runs). Its appends
// are fenced by that epoch; closing it leaves the lease held.
func (s *Store) OpenLeased(ctx context.Context, id string, epoch int64) (*session.JournalSession, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE id = $1 AND owner = $2 AND epoch = $3`,
		id, s.owner, epoch).Scan(&n); err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("open session %s at epoch %d: %w", id, epoch, ErrFenced)
	}
	return s.openAt(ctx, id, &journal{st: s, id: id, epoch: epoch})
}

func (s *Store) openAt(ctx context.Context, id string, j *journal) (*session.JournalSession, error) {
	t, n, err := s.load(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		// A session created but never given a prompt, leased by a
		// cluster: it starts empty.
		var cwd string
		if qerr := s.pool.QueryRow(ctx, `SELECT cwd FROM sessions WHERE id = $1`, id).Scan(&cwd); qerr != nil {
			return nil, err
		}
		h := session.Header{Type: "session", Version: session.CurrentVersion, ID: id,
			Timestamp: time.Now().UTC().Format(timeLayout), Cwd: cwd}
		return session.NewJournalSession(h, nil, j), nil
	}
	if err != nil {
		return nil, err
	}
	j.next = n
	return session.NewJournalSession(t.Header, t, j), nil
}

// acquire takes the lease of a persisted session, waiting as opts say.
func (s *Store) acquire(ctx context.Context, id string, opts *session.LockOptions) (int64, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		var epoch int64
		err := s.pool.QueryRow(ctx, `
			UPDATE sessions SET owner = $2, epoch = epoch + 1, lease_expires = `+leaseExpiry(3)+`
			WHERE id = $1 AND header IS NOT NULL AND (owner IS NULL OR lease_expires < now())
			RETURNING epoch`, id, s.owner, s.ttlMillis()).Scan(&epoch)
		if err == nil {
			return epoch, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("lock session %s: %w", id, err)
		}
		var owner *string
		var persisted bool
		err = s.pool.QueryRow(ctx, `SELECT owner, header IS NOT NULL FROM sessions WHERE id = $1`, id).Scan(&owner, &persisted)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !persisted) {
			return 0, fmt.Errorf("lock session %s: %w", id, session.ErrNotFound)
		}
		if err != nil {
			return 0, fmt.Errorf("lock session %s: %w", id, err)
		}
		timeout := session.DefaultLockTimeout
		if opts != nil && opts.Timeout > 0 {
			timeout = opts.Timeout
		}
		if opts == nil || !opts.Wait || time.Since(start) >= timeout {
			who := "another process"
			if owner != nil {
				who = *owner
			}
			return 0, &LockedError{Session: id, Owner: who, Waited: time.Since(start).Round(time.Millisecond)}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(session.LockBackoff(attempt)):
		}
	}
}

// LockedError says another owner holds a session's lease.
type LockedError struct {
	Session, Owner string
	Waited         time.Duration
}

func (e *LockedError) Error() string {
	msg := fmt.Sprintf("session %s is in use by %s", e.Session, e.Owner)
	if e.Waited > 0 {
		msg += fmt.Sprintf(" (waited %s)", e.Waited)
	}
	return msg + "; wait for that run to finish, or fork the session to continue it elsewhere"
}

// Is makes errors.Is(err, session.ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == session.ErrLocked }

// Lock takes a session's lease without opening it.
func (s *Store) Lock(ctx context.Context, id string, opts *session.LockOptions) (session.Lock, error) {
	return s.lease(ctx, id, opts)
}

// lease finds a persisted session and takes its lease.
func (s *Store) lease(ctx context.Context, id string, opts *session.LockOptions) (*journal, error) {
	id, err := s.resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	epoch, err := s.acquire(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	return &journal{st: s, id: id, epoch: epoch, release: true, created: true}, nil
}

// resolve returns the id of the persisted session named by id or a unique
// prefix of it.
func (s *Store) resolve(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", errors.New("find session: no id given")
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM sessions WHERE header IS NOT NULL AND (id = $1 OR id LIKE $2)
		ORDER BY id = $1 DESC LIMIT 3`, id, likePrefix(id))
	if err != nil {
		return "", fmt.Errorf("find session %s: %w", id, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("find session %s: %w", id, err)
	}
	switch {
	case len(ids) == 0:
		return "", fmt.Errorf("find session %s: %w", id, session.ErrNotFound)
	case ids[0] == id || len(ids) == 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("find session %s: the prefix matches several sessions; give more of the id", id)
}

func likePrefix(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// Load reads a session without taking its lease.
func (s *Store) Load(ctx context.Context, id string) (*session.Transcript, error) {
	id, err := s.resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	t, _, err := s.load(ctx, id)
	return t, err
}

// load reads the header and entries of id in one snapshot and returns the
// transcript and its number of entries.
func (s *Store) load(ctx context.Context, id string) (*session.Transcript, int64, error) {
	var data bytes.Buffer
	var n int64
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var hdr []byte
		if err := tx.QueryRow(ctx, `SELECT header::text FROM sessions WHERE id = $1 AND header IS NOT NULL`, id).Scan(&hdr); err != nil {
			return err
		}
		data.Write(hdr)
		data.WriteByte('\n')
		rows, err := tx.Query(ctx, `SELECT entry::text FROM session_entries WHERE session_id = $1 ORDER BY idx`, id)
		if err != nil {
			return err
		}
		var line []byte
		_, err = pgx.ForEachRow(rows, []any{&line}, func() error {
			data.Write(line)
			data.WriteByte('\n')
			n++
			return nil
		})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, fmt.Errorf("load session %s: %w", id, session.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("load session %s: %w", id, err)
	}
	t, err := session.Parse("postgres:"+id, data.Bytes())
	if err != nil {
		return nil, 0, err
	}
	return t, n, nil
}

// Export writes session id as JSONL: the lines a file store would hold.
func (s *Store) Export(ctx context.Context, id string, w io.Writer) error {
	t, err := s.Load(ctx, id)
	if err != nil {
		return err
	}
	return session.WriteJSONL(w, t)
}

// List describes the sessions of cwd ("" for all), the most recently
// updated first. It reads every entry of the sessions listed to count
// their totals.
func (s *Store) List(ctx context.Context, cwd string) ([]session.Info, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, updated_at FROM sessions
		WHERE header IS NOT NULL AND ($1 = '' OR cwd = $1) ORDER BY updated_at DESC, id DESC`, cwd)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	type row struct {
		id      string
		updated time.Time
	}
	var list []row
	var r row
	if _, err := pgx.ForEachRow(rows, []any{&r.id, &r.updated}, func() error { list = append(list, r); return nil }); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]session.Info, 0, len(list))
	for _, r := range list {
		in := session.Info{ID: r.id, Path: "postgres:" + r.id, Updated: r.updated}
		t, _, err := s.load(ctx, r.id)
		if err != nil {
			in.Err = err
			out = append(out, in)
			continue
		}
		in.Cwd, in.ParentSession, in.Stats = t.Header.Cwd, t.Header.ParentSession, t.Stats()
		in.Created, _ = time.Parse(time.RFC3339Nano, t.Header.Timestamp)
		out = append(out, in)
	}
	return out, nil
}

// Fork writes a new session holding the path from the root to leafID of
// session id, with the same entry ids, and returns its id. Its header
// names the source session as parentSession.
func (s *Store) Fork(ctx context.Context, id, leafID string, opts session.CreateOptions) (string, error) {
	t, err := s.Load(ctx, id)
	if err != nil {
		return "", err
	}
	entries, err := session.ForkEntries(t, leafID, &opts)
	if err != nil {
		return "", err
	}
	h, err := session.NewHeader(opts)
	if err != nil {
		return "", err
	}
	h.ParentSession = t.Header.ID
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		hdr, err := llm.MarshalJSON(h)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sessions (id, cwd, header) VALUES ($1, $2, $3)`, h.ID, h.Cwd, string(hdr)); err != nil {
			return err
		}
		return insertEntries(ctx, tx, h.ID, 0, entries)
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return "", fmt.Errorf("fork session %s: session %s already exists", t.Header.ID, h.ID)
		}
		return "", fmt.Errorf("fork session %s: %w", t.Header.ID, err)
	}
	return h.ID, nil
}

// insertEntries writes entries from index idx on in one batch.
func insertEntries(ctx context.Context, tx pgx.Tx, id string, idx int64, entries []session.Entry) error {
	b := &pgx.Batch{}
	for i := range entries {
		line, err := llm.MarshalJSON(entries[i])
		if err != nil {
			return fmt.Errorf("encode entry %s: %w", entries[i].ID, err)
		}
		b.Queue(`INSERT INTO session_entries (session_id, idx, entry, idem_key) VALUES ($1, $2, $3, $4)`,
			id, idx+int64(i), string(line), nullable(entries[i].IdemKey))
	}
	return tx.SendBatch(ctx, b).Close()
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Delete removes session id (its exact id) and its entries, unless
// another process holds its lease (session.ErrLocked).
func (s *Store) Delete(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1 AND (owner IS NULL OR lease_expires < now())`, id)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var owner *string
	err = s.pool.QueryRow(ctx, `SELECT owner FROM sessions WHERE id = $1`, id).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("delete session %s: %w", id, session.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	who := "another process"
	if owner != nil {
		who = *owner
	}
	return fmt.Errorf("delete session %s: %w", id, &LockedError{Session: id, Owner: who})
}

// RenewLeases extends every expiring lease this store's owner holds by
// LeaseTTL from now and returns how many it renewed.
func (s *Store) RenewLeases(ctx context.Context) (int64, error) {
	if s.ttl <= 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET lease_expires = now() + $2::bigint * interval '1 millisecond'
		WHERE owner = $1 AND lease_expires IS NOT NULL`, s.owner, s.ttlMillis())
	if err != nil {
		return 0, fmt.Errorf("renew session leases: %w", err)
	}
	return tag.RowsAffected(), nil
}

// KeepLeases renews the store's leases every interval (RenewLeases) until
// ctx ends. A process that dies stops renewing, so the sessions it held
// can be opened elsewhere LeaseTTL later; one that cannot reach the
// database meanwhile has its later appends refused (ErrFenced) once
// another process took a session over.
func (s *Store) KeepLeases(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, interval)
			_, _ = s.RenewLeases(rctx) // a failure is retried at the next tick
			cancel()
		}
	}
}
