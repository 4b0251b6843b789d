// Package mcp gives an agent the tools of Model Context Protocol servers.
// It reads server definitions in the format of Claude Code's .mcp.json
// (Load merges the user's file, a trusted workspace's file and explicit
// files), starts every server and lists its tools before returning (Start),
// and exposes each tool as a tool.Tool named mcp__<server>__<tool>, with a
// per-call timeout. A server that fails to start or dies later is reported
// in Manager.Status and its tools are dropped; it never fails the run.
// Manager.Close stops every server and everything they started.
//
// Servers are spoken to through github.com/modelcontextprotocol/go-sdk over
// stdio (a command), streamable HTTP, or the older SSE transport.
//
// It imports llm, tool and internal/proc from agentloop.
package mcp
