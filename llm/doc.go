// Package llm is the provider-neutral vocabulary of agentloop: messages and
// their content blocks, usage and cost, the streaming events a model emits,
// the Model interface every wire package implements, and the typed
// *ProviderError every provider failure becomes.
//
// It sits at the bottom of the house and imports nothing of agentloop's own.
// Wire packages (llm/anthropic, llm/openai, ...) build on it; the agent loop,
// sessions and the runner speak it.
package llm
