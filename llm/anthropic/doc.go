// Package anthropic speaks the Anthropic Messages API (POST /v1/messages
// with "stream": true) and maps its server-sent events into llm.Events.
//
// It builds the request from an llm.Request (system prompt, history with
// text, image, thinking, tool_use and tool_result blocks, tools, tool
// choice, thinking budget, prompt-cache breakpoints), decodes the stream
// (message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error), and turns every failure into an
// *llm.ProviderError through llm.NewHTTPError and llm.NetworkError.
//
// The HTTP exchange and the event builder are shared with the other wire
// packages in llm/internal/wire.
//
// This room may import llm, llm/sse, llm/jsonpartial and llm/internal/wire,
// and the standard library; nothing above llm.
package anthropic
