// Package openai speaks the OpenAI Chat Completions API (POST
// /chat/completions with "stream": true) and every compatible server:
// Ollama, vLLM, llama.cpp server, OpenRouter, Groq, DeepSeek, LM Studio.
//
// What each server accepts (developer or system role, max_tokens or
// max_completion_tokens, the usage-only final chunk, strict tools, how to ask
// for and replay reasoning) lives in one Compat record per provider, chosen
// by CompatFor or given in Config.
//
// The stream decoder accumulates tool calls keyed by their index (a new id on
// an index starts a new call; a missing or duplicate id is replaced by a
// fresh one) and ends a call's block as soon as its
// arguments are one complete object, so the call can start while the model
// keeps talking; it keeps reasoning_content-style thinking, reads
// the usage-only final chunk, and turns every failure into an
// *llm.ProviderError through llm.NewHTTPError and llm.NetworkError.
//
// NewResponses speaks the OpenAI Responses API (POST /responses) on the
// same plumbing: output items become blocks (reasoning items are kept whole,
// encrypted content included, and replayed to the same model; a function
// call's id is "call_id|item_id"), requests are stateless ("store": false),
// and response.completed / incomplete / failed map to stop, length and
// error.
//
// The HTTP exchange and the event builder are shared with the other wire
// packages in llm/internal/wire.
//
// This room may import llm, llm/sse, llm/jsonpartial and llm/internal/wire,
// and the standard library; nothing above llm.
package openai
