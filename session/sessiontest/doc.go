// Package sessiontest is the conformance suite of session.Store: every
// backend runs Run from its tests and must pass it, so the agent, the
// runner and the CLI can rely on one behaviour whatever keeps the
// transcripts.
//
// It imports session, llm and the standard library's testing packages.
package sessiontest
