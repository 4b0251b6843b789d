package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

var pg Shared

func TestMain(m *testing.M) { pg.Main(m) }

// The server answers on loopback, each test gets its own empty schema,
// and a crash-stop followed by Start brings the same data back.
func TestServerSchemaRestart(t *testing.T) {
	s := pg.Need(t)
	ctx := context.Background()
	dsn := s.Schema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE x (v int); INSERT INTO x VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	s.Crash(t)
	if _, err := pgx.Connect(ctx, dsn); err == nil {
		t.Fatal("connected to a killed server")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM x").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: %d, %v", v, err)
	}
}

// Without a server, Need skips with the reason outside CI.
func TestNeedSkipsWithoutServer(t *testing.T) {
	t.Setenv("CI", "")
	none := Shared{err: ErrUnavailable}
	var skipped bool
	t.Run("needs postgres", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		none.Need(t)
		t.Error("Need returned without a server")
	})
	if !skipped {
		t.Error("the test was not skipped")
	}
}
