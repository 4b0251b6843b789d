// Package wiretest holds the test helpers the wire packages share: Collect
// runs a stream and keeps what a test looks at, Serve answers with one
// canned response, Replay does so in memory, Fixture reads a recorded
// stream and Seeds gives them all to a fuzz target; and the checks every
// wire must pass the same way: RunCases (recorded streams and the events
// they must give), CheckStream (the event contract, for fuzz targets),
// CheckHTTPError (a refused call's classified error), CheckStreamFailure
// (a stream that failed after it began), IdleTimeout (on fake time),
// ConnectionReuse, AbortKeepsPartial, ConsumerBreak and Cancelled;
// BenchStream and BenchToolArgs are the decoding benchmarks' loops.
//
// It is imported by tests only, and imports llm and the standard library.
package wiretest
