// Package acp is agentloop's agent for editors: it speaks the Agent
// Client Protocol (ACP v1, JSON-RPC over a pair of streams, the editor
// being the client) on top of package runner, so Zed, JetBrains and Emacs
// drive an agentloop session as they drive any ACP agent.
//
// Serve runs one connection. Each ACP session is one of our sessions in
// Config.Store (session/new names it, session/load replays its transcript
// as updates, session/list lists the store's); each prompt is one run of
// runner, its events mapped to session/update notifications in their
// order (text and thinking chunks, tool calls with kind, locations, raw
// input and diffs, usage), and the prompt is answered only once the run has
// ended and every update was sent. A tool call that needs approval stays
// pending while session/request_permission asks the editor; session/cancel
// (or $/cancel_request on the prompt) aborts the run, withdraws every
// permission request still open, and the prompt ends "cancelled".
//
// What a run is made of (model, tools, system prompt, approval rules, the
// Runner with its hooks and MCP servers) is the caller's: Config.Open and
// Config.Request build it, so the CLI's `agentloop acp` shares `agentloop
// run`'s flags and a Go program can serve its own agent to an editor.
//
// The package lives beside the gateway (DESIGN: gateway, and gateway/acp
// for editors) because it is a face of the runner, not part of it. It
// imports runner, session, tool, tool/mcp, llm, command and
// github.com/coder/acp-go-sdk; nothing of agentloop imports it except the
// CLI.
package acp
