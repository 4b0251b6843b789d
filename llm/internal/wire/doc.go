// Package wire is the plumbing the provider wire packages (llm/anthropic,
// llm/openai, llm/google) share: the HTTP exchange of one streamed call
// with its idle timer and error classification (Exchange), and the
// Builder that turns decoded stream pieces into llm.Events and the
// assistant message they describe.
//
// A wire package decodes its own format and calls the Builder; the Builder
// keeps the event protocol the same on every wire: start first; blocks
// begun, grown and ended in order; tool arguments tolerant while they
// stream and strict when their block ends; exactly one terminal event
// (done, or error with the partial message) unless the consumer stops.
//
// Call runs a call with Open and Read: Open posts the request and checks
// the response, Read feeds the events of the stream to the wire's Decoder.
// NewSite applies a wire's Config defaults (base URL, client, idle timeout,
// provider; headers copied) the same way for every wire, and Site.Post
// describes a request to it.
//
// This room imports llm, llm/sse and llm/jsonpartial, and the standard
// library.
package wire
