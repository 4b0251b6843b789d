// Package faux is a scripted llm.Model: it replays canned replies as
// realistic streams of llm.Events, so the agent loop, the runner and the CLI
// can be tested, benchmarked and demonstrated without a provider.
//
// A Model plays a script, a list of Steps, one per Stream call. A step is
// either a canned reply (text, thinking and tool-call blocks, a stop reason,
// a provider failure, a delay per chunk) or a function of the request that
// returns one. Text and thinking arrive in several deltas, tool-call
// arguments are split mid-JSON; a cancelled context ends the stream with an
// error event whose message has StopReason aborted and keeps what was
// streamed. The model counts its calls, records the requests it got, and
// enforces its context window: a request whose estimated size (characters
// / 4) exceeds ModelInfo.ContextWindow fails before the first event with a
// *llm.ProviderError of Reason context_overflow. Usage is estimated the same
// way, so usage lines and compaction see plausible numbers.
//
// # Scripts as JSON
//
// Scripts load from JSON files (Load, Parse). The format, also described in
// docs/faux.md:
//
//	{
//	  "model":  {"id": "faux-1", "contextWindow": 128000, "maxTokens": 16384},
//	  "repeat": false,
//	  "steps": [
//	    {"thinking": "plan", "text": "Listing.", "toolCalls": [{"name": "ls", "arguments": {"path": "."}}]},
//	    {"content": [{"type": "text", "text": "blocks as in the transcript"}], "stopReason": "stop"},
//	    {"toolCalls": [{"name": "read", "rawArguments": "{\"path\": \"READ"}], "stopReason": "length"},
//	    {"error": {"reason": "rate_limit", "status": 429, "message": "slow down", "beforeStart": true}},
//	    {"text": "paced", "delayMs": 20, "tailMs": 1000}
//	  ]
//	}
//
// All fields are optional. A step's blocks are thinking, then text, then
// toolCalls, then content. "stopReason" defaults to toolUse when the step
// calls a tool and stop otherwise. "rawArguments" streams the given text as
// the arguments, even when it is not valid JSON (a cut-off call). "error"
// fails the reply after its blocks (or before the first event with
// "beforeStart"). "delayMs" paces every chunk; "tailMs" keeps the stream open
// after the last block. "repeat" starts the script over when it runs out;
// without it a call past the end fails.
//
// # Built-in scripts
//
// Builtin("demo") (also Demo()) lists the working directory with the ls
// tool, reads one regular file it saw (a README if there is one) with the
// read tool, and answers with a short summary. The CLI resolves
// --model faux/demo to it.
//
// Tool-call arguments follow the wire packages' conventions (package
// llm/jsonpartial): during toolcall_delta events the partial call holds the
// arguments parsed so far; toolcall_end holds the strictly parsed object, or,
// for text that is not one (a cut-off call), jsonpartial.Invalid of it.
//
// faux imports llm and llm/jsonpartial.
package faux
