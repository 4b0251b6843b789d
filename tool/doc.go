// Package tool defines what a tool is to agentloop and how a call to one is
// carried out: the Tool interface, a Registry, validation of the model's
// arguments against the tool's JSON schema (with the coercions models need,
// "5" to 5), and an execution lifecycle in which nothing a tool does (an
// error, a panic, a cancelled context) escapes as anything but a result the
// model can read.
//
// It sits just above llm and imports only llm from agentloop. Built-in tools
// live in tool/builtin, MCP tools in tool/mcp.
package tool
