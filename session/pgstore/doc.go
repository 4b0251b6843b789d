// Package pgstore keeps sessions in PostgreSQL: a session.Store that
// passes the sessiontest conformance suite, so several gateway nodes can
// share sessions through one database.
//
// A session is a row of sessions (its header, and the lease that stands
// for the file store's lock: owner, epoch, lease_expires) and its entries
// are rows of session_entries, numbered in order. Every append is fenced:
// it is written only while the sessions row still names this store's
// owner and the epoch the lease was taken at, in the same statement, so a
// process that lost its lease (paused, partitioned, its lease taken over
// by another node) writes nothing and gets ErrFenced. Entries are stored
// as json (not jsonb): the text is kept as written, so the JSONL export
// (Store.Export) is byte for byte what the file store holds, and a NUL in
// a tool's output, which jsonb refuses, is stored.
//
// The schema is created and upgraded by Migrate when a Store is made:
// versioned steps in one transaction under a transaction-scoped advisory
// lock, so several nodes starting at once apply each step once. Package
// cluster adds its tables through the same Migrate.
//
// pgstore imports session, llm and pgx.
package pgstore
