// Package wiretest holds the test helpers the wire packages share: Collect
// runs a stream and keeps what a test looks at, Serve answers with one
// canned response, Replay does so in memory; and the checks every wire
// must pass the same way: CheckStream (the event contract, for fuzz
// targets), CheckHTTPError (a refused call's classified error), IdleTimeout
// (on fake time), ConnectionReuse, AbortKeepsPartial and ConsumerBreak.
//
// It is imported by tests only, and imports llm and the standard library.
package wiretest
