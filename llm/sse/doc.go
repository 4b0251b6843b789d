// Package sse reads server-sent event streams as the model providers send
// them: event, data, id and retry fields, multi-line data, comment lines
// (": OPENROUTER PROCESSING"), LF, CRLF and lone CR line ends, a leading
// byte-order mark, and a size limit per event.
//
// The reader does not interpret payloads: "[DONE]" is an ordinary data
// value that Event.Done recognises. Comments are skipped and counted, never
// returned, so a caller that resets an idle timer per event is not fooled by
// keep-alive comments.
//
// This room imports only the standard library.
package sse
