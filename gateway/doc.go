// Package gateway serves many sessions of one runner.Runner over HTTP: a
// REST API for sessions, runs, approvals and slash commands, each session's
// events as Server-Sent Events (and, in ws.go, a WebSocket JSON-RPC), and a
// web chat page (web.go).
//
// The core is transport-neutral: a REST handler decodes its request, calls
// one method of *Server, and encodes the answer or its *Error; the
// WebSocket and stdio JSON-RPC call the same methods. Events are numbered
// per session (seq, across every run of the session, never reset, kept in
// Config.StateDir across restarts), kept in a bounded ring per session so a
// client that reconnects resumes where it left off, and fanned out to each
// subscriber through a bounded queue: a subscriber that cannot keep up is
// cut (and resumes by seq), never sent a stream with a hole in it.
//
// A tool call that needs approval becomes a PendingAction: listed, sent as
// approval_requested to every (re)subscriber, answered once (the first
// answer wins), resolved cancelled when its run is aborted.
//
// See docs/gateway.md for the API and docs/protocol.md for the events.
//
// gateway imports runner, session, agent, tool, llm, clock and command;
// nothing in agentloop imports it except the CLI.
package gateway
