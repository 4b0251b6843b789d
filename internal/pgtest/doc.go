// Package pgtest runs a real PostgreSQL server for tests: Debian's
// PostgreSQL 15 (initdb and postgres, found on PATH or under
// /usr/lib/postgresql/*/bin), in a temporary data directory, listening on
// 127.0.0.1 and a free port only, trust authentication. PostgreSQL refuses
// to run as root, so as root the server runs as the "postgres" user.
//
// A package starts one server in its TestMain (Shared.Main) and gives each
// test its own schema (Server.Schema), so tests do not each pay for an
// initdb.
// Where no PostgreSQL can be found the tests that need it skip with a
// message, unless CI is set: there they fail.
//
// It imports internal/proc (the server is a child process tree it owns)
// and pgx.
package pgtest
