package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/internal/pgtest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session/pgstore"
)

// agentloop serve --store postgres://… against mockllm's real wire and a
// real PostgreSQL: it migrates the empty database at start, keeps the
// session there (and no file), and a second server on the same database
// continues the session where the first left it.
func TestServeStorePostgres(t *testing.T) {
	dsn := pgtest.Start(t).Schema(t)
	home, ws := t.TempDir(), t.TempDir()
	env := []string{"OPENAI_API_KEY=sk-mock"}
	base := mockLLM(t, "-rounds", "1", "-text", "3")
	args := []string{"--model", "openai/mock-model", "--base-url", base + "/v1", "--store", dsn}

	sc := startServe(t, ws, home, env, args...)
	if !strings.Contains(sc.stderr.String(), "sessions in postgres://") {
		t.Errorf("the listening line does not name the database: %s", sc.stderr)
	}
	var sess struct{ ID string }
	if st := sc.call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 || sess.ID == "" {
		t.Fatalf("create session: %d", st)
	}
	runOnce := func(sc *servedCLI, input string) {
		t.Helper()
		var run struct {
			RunID string
			Error any
		}
		if st := sc.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": input, "idempotencyKey": input}, &run); st != 202 {
			t.Fatalf("start run: %d %v", st, run.Error)
		}
		sc.runEvents(t, run.RunID, "")
		var r struct{ Status string }
		sc.call(t, "GET", "/v1/runs/"+run.RunID, "", nil, &r)
		if r.Status != "succeeded" {
			t.Fatalf("run status %q: %s", r.Status, sc.stderr)
		}
	}
	runOnce(sc, "first question")

	// A second server on the same database (the first still running)
	// continues the session.
	sc2 := startServe(t, ws, home, env, args...)
	runOnce(sc2, "second question")

	ctx := context.Background()
	st := pgSessions(t, dsn)
	tr, err := st.Load(ctx, sess.ID)
	if err != nil {
		t.Fatalf("the session is not in PostgreSQL: %v", err)
	}
	var users []string
	assistants := 0
	for _, m := range tr.Context("").Messages {
		switch m.Role {
		case llm.RoleUser:
			users = append(users, m.Text())
		case llm.RoleAssistant:
			assistants++
		}
	}
	if len(users) != 2 || users[0] != "first question" || users[1] != "second question" || assistants < 2 {
		t.Errorf("transcript: users %q, %d assistant messages", users, assistants)
	}
	// The sessions commands read the database too; its JSONL export is
	// what the store exports.
	code, out, errs := execCLIIn(t, "", ws, home, nil, "sessions", "list", "--all", "--store", dsn)
	if code != 0 || !strings.Contains(out, sess.ID) || !strings.Contains(out, ws) {
		t.Errorf("sessions list --store: exit %d: %s%s", code, out, errs)
	}
	var want bytes.Buffer
	if err := st.Export(ctx, sess.ID, &want); err != nil {
		t.Fatal(err)
	}
	code, out, errs = execCLIIn(t, "", ws, home, nil, "sessions", "export", sess.ID[:13], "--format", "jsonl", "--store", dsn)
	if code != 0 || out != want.String() {
		t.Errorf("sessions export --format jsonl --store: exit %d: %s\nwant:\n%s", code, out+errs, want.String())
	}
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*.jsonl"))
	if len(files) != 0 {
		t.Errorf("the file store was written too: %v", files)
	}
	if _, err := os.Stat(filepath.Join(home, "sessions")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(home, "sessions"))
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".jsonl") {
				t.Errorf("a transcript file %s", e.Name())
			}
		}
	}
}

// pgSessions opens the sessions of the database at dsn, as a test reads
// them.
func pgSessions(t *testing.T, dsn string) *pgstore.Store {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A --store that is not a postgres:// URL is a usage error; the password
// of one is not printed.
func TestServeStoreFlag(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	code, _, errs := execCLIIn(t, "", ws, home, nil, "serve", "--model", "faux/demo", "--store", "mysql://x/y")
	if code != exitUsage || !strings.Contains(errs, "postgres://") {
		t.Errorf("serve --store mysql://: exit %d: %s", code, errs)
	}
	if got := redactURL("postgres://al:s3cret@db.internal:5432/agents?sslmode=require"); strings.Contains(got, "s3cret") || !strings.Contains(got, "db.internal:5432/agents") {
		t.Errorf("redacted %q", got)
	}
}

// A server killed with kill -9 in the middle of a run leaves its session
// held only until its lease lapses: another server on the database runs
// on the session within the lease (15 s) and a few polls, and the killed
// run's prompt is kept.
func TestServeStorePostgresKilledServer(t *testing.T) {
	dsn := pgtest.Start(t).Schema(t)
	ws := t.TempDir()
	env := []string{"OPENAI_API_KEY=sk-mock"}
	slow := mockLLM(t, "-rounds", "0", "-text", "2", "-delay", "60s")
	a := startServe(t, ws, t.TempDir(), env, "--model", "openai/mock-model", "--base-url", slow+"/v1", "--store", dsn)
	var sess struct{ ID string }
	if st := a.call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 {
		t.Fatalf("create session: %d", st)
	}
	var run struct{ RunID string }
	if st := a.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "killed mid-run", "idempotencyKey": "a1"}, &run); st != 202 {
		t.Fatalf("start run: %d", st)
	}
	ctx := context.Background()
	st := pgSessions(t, dsn)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := st.Load(ctx, sess.ID); err == nil {
			break // the prompt is stored: the run holds the session
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never stored its prompt: %s", a.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.cmd.Process.Kill()
	<-a.done
	killed := time.Now()

	fast := mockLLM(t, "-rounds", "0", "-text", "2")
	b := startServe(t, ws, t.TempDir(), env, "--model", "openai/mock-model", "--base-url", fast+"/v1", "--store", dsn)
	for i := 0; ; i++ {
		var r struct{ RunID string }
		key := "b" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if code := b.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "continue", "idempotencyKey": key}, &r); code == 202 {
			b.runEvents(t, r.RunID, "")
			var got struct{ Status string }
			b.call(t, "GET", "/v1/runs/"+r.RunID, "", nil, &got)
			if got.Status == "succeeded" {
				break
			}
		}
		if time.Since(killed) > cluster.DefaultLeaseTTL+10*time.Second {
			t.Fatalf("no run succeeded on the session %s after the server was killed: %s", time.Since(killed), b.stderr)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("the session ran on another server %s after kill -9", time.Since(killed).Round(time.Millisecond))
	tr, err := st.Load(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range tr.Context("").Messages {
		if m.Role == llm.RoleUser {
			users = append(users, m.Text())
		}
	}
	if len(users) != 2 || users[0] != "killed mid-run" || users[1] != "continue" {
		t.Errorf("prompts in the transcript: %q", users)
	}
}
