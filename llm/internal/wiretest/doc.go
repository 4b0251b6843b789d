// Package wiretest holds the test helpers the wire packages share: a
// collector of a stream's events, a one-answer HTTP server, and the checks
// every wire must pass the same way (the idle timeout on fake time,
// connection reuse after a complete reply).
//
// It is imported by tests only, and imports llm, net/http/httptest and
// the standard library.
package wiretest
