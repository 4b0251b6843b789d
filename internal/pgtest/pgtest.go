package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/internal/proc"
)

// ErrUnavailable says that no PostgreSQL server can be run here.
var ErrUnavailable = errors.New("no PostgreSQL server binaries (initdb, postgres) found; install Debian's postgresql-15")

// Server is a running PostgreSQL server owned by a test binary.
type Server struct {
	// DSN connects to the "postgres" database as the superuser "postgres".
	DSN  string
	Port int

	bin  string // directory of initdb and postgres
	dir  string // the temporary directory: data/ and the log
	cred *syscall.Credential

	mu   sync.Mutex
	cmd  *proc.Command
	done chan struct{} // closed when cmd was waited for
	log  *os.File
}

// FindBin returns the directory holding initdb and postgres: PATH first
// (where the Debian package does not put them), then Debian's
// /usr/lib/postgresql/<version>/bin, newest first.
func FindBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		d := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", ErrUnavailable
}

// Launch initialises a fresh cluster in a temporary directory and starts
// it. It returns an error wrapping ErrUnavailable when PostgreSQL is not
// installed. Stop ends it and removes the directory.
func Launch(ctx context.Context) (*Server, error) {
	bin, err := FindBin()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root needs the postgres user (%v): %w", err, ErrUnavailable)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	s.dir, err = os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			s.remove()
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(s.dir, "data")
	initdb := s.command(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	if out, err := initdb.Cmd.CombinedOutput(); err != nil {
		initdb.Sweep(false, time.Second)
		s.remove()
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	initdb.Sweep(false, time.Second)
	if s.Port, err = freePort(); err != nil {
		s.remove()
		return nil, err
	}
	s.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	if err := s.Start(ctx); err != nil {
		s.remove()
		return nil, err
	}
	return s, nil
}

// command is a proc.Command for one of the server's programs, run as the
// postgres user when this process is root.
func (s *Server) command(ctx context.Context, name string, args ...string) *proc.Command {
	c := proc.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	c.Cmd.Dir = s.dir
	c.Cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		c.Cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return c
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts the server on its data directory and port and waits until
// it accepts connections. It is used again after Kill to restart it.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: the server is running")
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	// The server outlives ctx (a TestMain's setup): nil gives a command
	// that only our Kill ends. fsync=off loses nothing when only the
	// server process dies (the WAL is in the page cache), which is the
	// crash the tests make; synchronous_commit stays on for that reason.
	c := s.command(nil, "postgres", "-D", filepath.Join(s.dir, "data"),
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(s.Port),
		"-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "max_connections=200",
		"-c", "full_page_writes=off")
	c.Cmd.Stdout, c.Cmd.Stderr = log, log
	if err := c.Start(); err != nil {
		log.Close()
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = c.Cmd.Wait(); close(done) }()
	s.cmd, s.log, s.done = c, log, done
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, s.DSN)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		exited := false
		select {
		case <-done:
			exited = true
		default:
		}
		if exited || time.Now().After(deadline) || ctx.Err() != nil {
			s.killLocked()
			return fmt.Errorf("pgtest: postgres did not accept connections: %v\n%s", err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill ends the server at once, as a crash would (SIGQUIT: PostgreSQL's
// immediate shutdown, pg_ctl stop -m immediate), and waits for it. The
// data stay; Start brings it back with crash recovery.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killLocked()
}

func (s *Server) killLocked() error {
	if s.cmd == nil {
		return nil
	}
	c := s.cmd
	s.cmd = nil
	_ = c.Cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = c.Cmd.Process.Kill()
		<-s.done
	}
	c.Sweep(false, 5*time.Second)
	s.log.Close()
	return nil
}

// Stop ends the server and removes its directory.
func (s *Server) Stop() error {
	err := s.Kill()
	s.remove()
	return err
}

func (s *Server) remove() { _ = os.RemoveAll(s.dir) }

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Schema creates a fresh schema for one test and returns a DSN whose
// search_path is that schema, so each test sees empty tables of its own.
// It is dropped when the test ends.
func (s *Server) Schema(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, s.DSN)
		if err != nil {
			return // a test that stopped the server
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
	})
	return s.DSN + "&search_path=" + name
}

// Shared is the one server of a test binary, started by its TestMain:
//
//	var pg pgtest.Shared
//
//	func TestMain(m *testing.M) { pg.Main(m) }
//
// and taken by each test with pg.Need(t).
type Shared struct {
	srv *Server
	err error // why there is no server
}

// Main is a TestMain's body for a package whose tests need PostgreSQL: it
// launches the server (or records why none can be had, for Need), runs
// the tests, stops the server, checks for leaked goroutines (goleak, as
// goleak.VerifyTestMain does) and exits with the tests' code.
func (sh *Shared) Main(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	sh.srv, sh.err = Launch(ctx)
	cancel()
	code := m.Run()
	if sh.srv != nil {
		sh.srv.Stop()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Need returns the server a test needs, or skips the test (fails it when
// the CI environment variable is set) with the reason it could not start.
func (sh *Shared) Need(t testing.TB) *Server {
	t.Helper()
	if sh.srv != nil {
		return sh.srv
	}
	reason := sh.err
	if reason == nil {
		reason = ErrUnavailable
	}
	if ci := os.Getenv("CI"); ci != "" && strings.ToLower(ci) != "false" {
		t.Fatalf("PostgreSQL is required in CI: %v", reason)
	}
	t.Skipf("skipped: needs PostgreSQL: %v", reason)
	return nil
}

// Start launches a server of its own for one test, stopped at its end;
// where none can be had it skips the test (fails it in CI) as Need does.
// A package whose tests all need one shares it instead (Shared).
func Start(t testing.TB) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Launch(ctx)
	if err != nil {
		return (&Shared{err: err}).Need(t)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// Crash kills the server as Kill does, for a test that restarts it with
// Start; if the test ends first, the server is started again for the
// tests after it.
func (s *Server) Crash(t testing.TB) {
	t.Helper()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.mu.Lock()
		down := s.cmd == nil
		s.mu.Unlock()
		if down {
			if err := s.Start(context.Background()); err != nil {
				t.Errorf("restart the server: %v", err)
			}
		}
	})
}
