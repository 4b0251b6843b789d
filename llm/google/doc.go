// Package google speaks the Gemini API of Google AI Studio
// (POST /models/{id}:streamGenerateContent?alt=sse) and maps its stream of
// GenerateContentResponse chunks into llm.Events.
//
// The key travels in the x-goog-api-key header, never in the URL, so it
// cannot leak into error messages or logs. The request carries the
// history as contents of parts (text, inlineData, functionCall,
// functionResponse, thought parts with their thought signatures), the
// system prompt as systemInstruction, the tools as functionDeclarations
// whose JSON schemas are cut down to what Gemini accepts, and a
// thinkingConfig per thinking level (token budgets for Gemini 2.5,
// thinkingLevel for Gemini 3).
//
// Gemini sends function calls whole, so a call becomes toolcall_start, one
// toolcall_delta with all of its arguments, and toolcall_end. Calls without
// an id (or with a repeated one) get a synthesised id. Thought signatures
// are kept on the blocks they came with (ThinkingSignature on thinking,
// TextSignature on text, ThoughtSignature on tool calls) and sent back when
// the history is replayed to the same model.
//
// finishReason STOP with function calls becomes llm.StopReasonToolUse,
// MAX_TOKENS llm.StopReasonLength (toolUse too when calls came before the
// cap: they arrive whole, so they are complete); the safety and policy
// stops (SAFETY,
// RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, ...) and a blocked
// prompt (promptFeedback.blockReason) end the stream with a clear error.
// Every failure is an *llm.ProviderError made by llm.NewHTTPError or
// llm.NetworkError.
//
// This room may import llm, llm/sse, llm/jsonpartial and llm/internal/wire
// (the exchange and event builder every wire shares), and the standard
// library; nothing above llm.
package google
