// Package wrap is middleware on the incoming model stream: layers that sit
// between a wire package's llm.Model and the agent loop and fix, as the
// reply streams in, the ways real models misbehave.
//
// The layers, innermost (closest to the provider) first, in this fixed
// order:
//
//  1. Text transforms: literal rewrites a provider needs on its text
//     (Config.Text), applied while streaming without ever splitting a match.
//  2. Tool-call repair (Config.Repair): a call whose arguments are not a
//     JSON object is repaired when the fix is unambiguous (trailing commas,
//     single quotes, Python literals, a code fence, an object encoded as a
//     JSON string); otherwise it stays marked invalid the way llm/jsonpartial
//     marks it, so it is answered with an error and never run. Calls with an
//     empty name are dropped.
//  3. Promotion of text tool calls (Config.Promote): a model that writes a
//     call as text in a known format (<tool_call>{...}</tool_call>,
//     <function=name>{...}</function>, [TOOL_CALLS][...], a fenced or bare
//     JSON object naming an offered tool) gets a real toolCall block, and a
//     reply that stopped becomes a toolUse reply.
//  4. Tool-name normalisation (Config.Normalize): a call's name is matched
//     to the offered tools despite whitespace, case or provider prefixes
//     (functions., default_api:, ...).
//
// Repair (sanitising) comes before promotion on purpose: a call promoted
// from text whose JSON is broken stays marked invalid and is answered with
// an error, never run. Were repair after promotion, it would "fix" text the
// model never sent as a real call into a call that runs. Normalisation
// comes last so that it sees every call, promoted ones included.
//
// Each layer re-emits the stream with its own message: content indexes stay
// dense and in order, Partial always holds the blocks emitted so far, and
// the final message holds exactly the blocks the events announced. Repairs
// of the outgoing history (pairing, turn order) belong to package session,
// not here.
//
// This room may import llm and llm/jsonpartial, and the standard library.
package wrap
