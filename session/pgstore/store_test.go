package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/session/sessiontest"
)

// newPool connects to a fresh schema of the test server.
func newPool(t *testing.T) *pgxpool.Pool { return newPoolTB(t) }

func newPoolTB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dsn := pg.Need(t).Schema(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func newStore(t *testing.T, cfg *Config) *Store {
	t.Helper()
	st, err := New(context.Background(), newPool(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return newStore(t, nil) })
}

// Three nodes starting at once on an empty database each run the
// migrations; every step is applied once and all three stores work.
func TestMigrateConcurrently(t *testing.T) {
	dsn := pg.Need(t).Schema(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		wg.Go(func() {
			pool, err := pgxpool.New(context.Background(), dsn)
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			_, errs[i] = New(context.Background(), pool, nil)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	pool := newPoolDSN(t, dsn)
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations WHERE component = 'session'`).Scan(&n); err != nil || n != len(steps) {
		t.Fatalf("%d migration rows (%v), want %d", n, err, len(steps))
	}
}

func newPoolDSN(t *testing.T, dsn string) *pgxpool.Pool {
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// The JSONL export of a Postgres session is byte for byte the file the
// file store writes for the same entries.
func TestExportMatchesFileStore(t *testing.T) {
	ctx := context.Background()
	pgst := newStore(t, nil)
	fst := session.NewJSONLStore(t.TempDir())
	entries := []session.Entry{
		session.ModelChangeEntry("faux", "faux-1"),
		session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("a <b> & \"c\" \u00e9\u0000")}, Timestamp: 1}),
		session.MessageEntry(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("ok")}, StopReason: llm.StopReasonStop,
			Provider: "faux", Model: "faux-1", Usage: &llm.Usage{Total: 7, Cost: llm.Cost{Total: 0.1}}, Timestamp: 2}),
		session.CustomEntry("ext", json.RawMessage(`{"z":1,"a":[1,2.50,"x"]}`)),
	}
	entries[3].IdemKey = "k"
	var files [][]byte
	for _, st := range []session.Store{fst, pgst} {
		s, err := st.Create(ctx, session.CreateOptions{ID: "export-1", Cwd: "/x"})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range entries {
			e.ID = string(rune('a'+i)) + "0000000"
			e.Timestamp = "2026-01-02T03:04:05.678Z"
			if _, err := s.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		tr, err := st.Load(ctx, "export-1")
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := session.WriteJSONL(&b, tr); err != nil {
			t.Fatal(err)
		}
		files = append(files, b.Bytes())
	}
	disk, err := os.ReadFile(mustResolve(t, fst, "export-1"))
	if err != nil {
		t.Fatal(err)
	}
	// The header's timestamp is the creation time of each: align it.
	var hf, hp session.Header
	json.Unmarshal(bytes.SplitN(disk, []byte("\n"), 2)[0], &hf)
	json.Unmarshal(bytes.SplitN(files[1], []byte("\n"), 2)[0], &hp)
	pgBytes := bytes.Replace(files[1], []byte(hp.Timestamp), []byte(hf.Timestamp), 1)
	if !bytes.Equal(disk, files[0]) {
		t.Errorf("the file store's export differs from its file:\n%s\n%s", disk, files[0])
	}
	if !bytes.Equal(disk, pgBytes) {
		t.Errorf("the Postgres export differs from the file:\nfile:\n%s\npostgres:\n%s", disk, pgBytes)
	}
	var b bytes.Buffer
	if err := pgst.Export(ctx, "export-1", &b); err != nil || !bytes.Equal(b.Bytes(), files[1]) {
		t.Errorf("Store.Export: %v\n%s", err, b.Bytes())
	}
}

func mustResolve(t *testing.T, st *session.JSONLStore, id string) string {
	p, err := st.Resolve(id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A session whose lease was taken over refuses the next append with
// ErrFenced and writes nothing; the new holder's entries stand alone.
func TestFencedAppend(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	a, err := New(ctx, pool, &Config{Owner: "node-a", LeaseTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, pool, &Config{Owner: "node-b", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := a.Create(ctx, session.CreateOptions{Cwd: "/f"})
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	user := session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hi")}, Timestamp: 1})
	if _, err := sa.Append(ctx, user); err != nil {
		t.Fatal(err)
	}
	// a's lease (1 ms) expires: b takes the session over.
	sb, err := b.Open(ctx, sa.ID(), &session.LockOptions{Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.Append(ctx, session.CustomEntry("b", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Append(ctx, session.CustomEntry("a-late", nil)); !errors.Is(err, ErrFenced) {
		t.Fatalf("append after takeover: %v, want ErrFenced", err)
	}
	if sa.Leaf() == "" || len(sa.Transcript().Entries) != 1 {
		t.Errorf("the fenced session took the refused entry into memory")
	}
	sa.Close() // must not release b's lease
	tr, err := b.Load(ctx, sa.ID())
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range tr.Entries {
		types = append(types, string(e.Type)+"/"+e.CustomType)
	}
	if len(types) != 2 || types[1] != "custom/b" {
		t.Errorf("entries %v, want the prompt and b's entry only", types)
	}
	if _, err := a.Open(ctx, sa.ID(), nil); !errors.Is(err, session.ErrLocked) {
		t.Errorf("a's Close released b's lease: open %v", err)
	}
}

// PostgreSQL dies under an open session: appends fail visibly (not as
// fenced), the session keeps what was committed, and once the server is
// back the retried append (same idempotency key) is written once.
func TestPostgresRestart(t *testing.T) {
	srv := pg.Need(t)
	ctx := context.Background()
	st := newStore(t, nil)
	s, err := st.Create(ctx, session.CreateOptions{Cwd: "/restart"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	user := session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hi")}, Timestamp: 1})
	if _, err := s.Append(ctx, user); err != nil {
		t.Fatal(err)
	}
	srv.Crash(t)
	e := session.CustomEntry("result", json.RawMessage(`{"n":1}`))
	e.IdemKey = "run1/1/call1"
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = s.Append(actx, e)
	cancel()
	if err == nil || errors.Is(err, ErrFenced) {
		t.Fatalf("append with the database down: %v, want a connection error", err)
	}
	if n := len(s.Transcript().Entries); n != 1 {
		t.Fatalf("the failed append is in memory: %d entries", n)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := s.Append(ctx, e); err != nil {
			t.Fatalf("append %d after the restart: %v", i, err)
		}
	}
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 || tr.Entries[1].IdemKey != "run1/1/call1" {
		t.Fatalf("after the restart %d entries, want the prompt and one result", len(tr.Entries))
	}
}

// Delete removes a session and its entries, but not one that is open.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, nil)
	s, err := st.Create(ctx, session.CreateOptions{Cwd: "/del"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("x")}})); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, s.ID()); !errors.Is(err, session.ErrLocked) {
		t.Errorf("delete an open session: %v, want ErrLocked", err)
	}
	s.Close()
	if err := st.Delete(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, s.ID()); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("load after delete: %v", err)
	}
	var n int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM session_entries WHERE session_id = $1`, s.ID()).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d entries left (%v)", n, err)
	}
	if err := st.Delete(ctx, s.ID()); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("delete twice: %v, want ErrNotFound", err)
	}
}

// A store with a lease TTL keeps its open sessions by renewing; once it
// stops (its process died), another store opens the session a TTL later,
// and the first one's appends are then refused.
func TestKeepLeases(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	const ttl = 300 * time.Millisecond
	a, err := New(ctx, pool, &Config{Owner: "a", LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, pool, &Config{Owner: "b", LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := a.Create(ctx, session.CreateOptions{Cwd: "/keep"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Append(ctx, session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("x")}})); err != nil {
		t.Fatal(err)
	}
	kctx, stop := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() { a.KeepLeases(kctx, ttl/3); close(kept) }()
	time.Sleep(3 * ttl)
	if _, err := b.Open(ctx, sa.ID(), nil); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("open a renewed session: %v, want ErrLocked", err)
	}
	stop() // a dies
	<-kept
	died := time.Now()
	sb, err := b.Open(ctx, sa.ID(), &session.LockOptions{Wait: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if d := time.Since(died); d > ttl+time.Second {
		t.Errorf("opened %s after the renewals stopped", d)
	}
	if _, err := sa.Append(ctx, session.CustomEntry("late", nil)); !errors.Is(err, ErrFenced) {
		t.Errorf("append by the dead store: %v, want ErrFenced", err)
	}
}
