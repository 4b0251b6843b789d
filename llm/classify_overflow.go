package llm

import (
	"strconv"
	"strings"

	"github.com/agentloop/agentloop/internal/lazyre"
)

// overflowRe matches the providers' ways of saying the prompt does not fit
// the context window.
var overflowRe = rule(strings.Join([]string{
	`prompt is too long`,               // Anthropic
	`request_too_large`,                // Anthropic, byte size (HTTP 413)
	`request exceeds the maximum size`, // Anthropic 413 message
	`input is too long`,                // Bedrock, Mistral, OpenAI Responses
	`exceeds the context window`,       // OpenAI
	`exceeds? (?:the )?(?:model(?:'s)? )?context (?:window|limit|length)`, // "Request size exceeds model context window", "exceed context limit"
	`context window exceeded`,                             // generic
	`context window exceeds limit`,                        // MiniMax
	`input token count.*exceeds the maximum`,              // Gemini
	`exceeds the maximum number of tokens`,                // Gemini INVALID_ARGUMENT
	`maximum prompt length is \d+`,                        // xAI
	`reduce the length of the messages`,                   // Groq
	`maximum context length(?: is \d+)?`,                  // OpenAI, OpenRouter, vLLM, DeepSeek
	`context[_ ]length[_ ]exceeded`,                       // OpenAI code, generic
	`model_context_window_exceeded`,                       // Anthropic stop reason, z.ai
	`context_window_exceeded`,                             // proxies' stop reason
	`exceeds (?:the )?available context size`,             // llama.cpp server
	`exceed (?:the )?context budget`,                      // "input length would exceed context budget"
	`greater than the context length`,                     // LM Studio
	`exceeded model token limit`,                          // Kimi
	`too large for model with \d+ maximum context length`, // Mistral
	`prompt too long`,                                     // Ollama and others
	`prompt too large`,                                    // generic, and our own precheck
	`exceeds the limit of \d+`,                            // GitHub Copilot
	`exceeds the model'?s maximum`,                        // "total tokens exceeds the model's maximum limit"
	`too many tokens`,                                     // generic
	`token limit exceeded`,                                // generic
	`context window is \d+k? tokens.*requested`,           // "Model context window is 128k tokens, you requested 256k tokens"
	`^context overflow:`,                                  // our own texts
	`^4(?:00|13)\s*(?:status code)?\s*\(no body\)`,        // Cerebras
	`上下文过长|上下文超出|上下文长度超|超出最大上下文|压缩上下文`, // Chinese proxies
}, "|"))

// notOverflowRe marks texts that mention tokens or limits but are rate
// limits, quota or billing problems, or a model that needs reasoning on.
var notOverflowRe = rule(`rate[ _-]?limit|too many requests|tokens per (?:minute|day|hour)|\b(?:tpm|tpd|rpm)\b|exceeded your current quota|quota|per day|throttl|reasoning is mandatory|requires reasoning|context window too small|^(?:throttling error|service unavailable):`)

// IsContextOverflow reports whether an error text says the request did not
// fit the model's context window. It knows the wording of Anthropic,
// OpenAI, Gemini, Bedrock, xAI, Groq, OpenRouter, Mistral, DeepSeek, Ollama,
// llama.cpp, LM Studio, vLLM and several proxies, and rejects rate-limit,
// quota and billing texts that merely mention tokens. Texts starting with
// "Context overflow:" (the runner's own precheck errors) count.
func IsContextOverflow(text string) bool {
	if len(text) > maxHay {
		text = text[:maxHay]
	}
	t := strings.ToLower(strings.TrimSpace(text))
	if t == "" || !overflowRe.MatchString(t) {
		return false
	}
	if notOverflowRe.MatchString(t) {
		return false
	}
	return !isBillingText("", t)
}

// overflowCountRe finds the observed prompt size in an overflow message.
var overflowCountRe = lazyre.New(`(?i)(?:prompt is too long:\s*|resulted in\s+|requested\s+(?:about\s+)?|request contains\s+|prompt contains\s+|input token count\s*(?:\(|of\s+)?|prompt \(|requested:\s*|prompt token count of\s+)([\d,]+)`)

// OverflowTokens returns the prompt size an overflow message reports
// ("prompt is too long: 277403 tokens > 200000 maximum" gives 277403), and
// false when the text names none.
func OverflowTokens(text string) (int, bool) {
	if len(text) > maxHay {
		text = text[:maxHay]
	}
	m := overflowCountRe.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// overflowLimitRes find the window an overflow message states, most
// specific first: each has one group, the number of tokens.
var overflowLimitRes = []*lazyre.Regexp{
	lazyre.New(`(?i)maximum context length is\s+([\d,]+)`),                               // OpenAI, vLLM, OpenRouter, DeepSeek
	lazyre.New(`(?i)prompt is too long:\s*[\d,]+\s*tokens?\s*>\s*([\d,]+)`),              // Anthropic
	lazyre.New(`(?i)exceed context limit:\s*[\d,]+\s*\+\s*[\d,]+\s*>\s*([\d,]+)`),        // Anthropic, input + max_tokens
	lazyre.New(`(?i)available context size\s*\(\s*([\d,]+)\s*tokens?\)`),                 // llama.cpp
	lazyre.New(`(?i)too large for model with\s+([\d,]+)\s+maximum context length`),       // Mistral
	lazyre.New(`(?i)maximum prompt length is\s+([\d,]+)`),                                // xAI
	lazyre.New(`(?i)greater than the context length of\s+([\d,]+)`),                      // LM Studio
	lazyre.New(`(?i)maximum number of tokens allowed\s*\(\s*([\d,]+)\s*\)`),              // Gemini
	lazyre.New(`(?i)context (?:window|length|size|limit) (?:is|of)\s+([\d,]+)\s*tokens`), // generic
}

// OverflowLimit returns the context window an overflow message states
// ("maximum context length is 15360 tokens", "prompt is too long: 210000
// tokens > 200000 maximum", "exceeds the available context size (16384
// tokens)" give 15360, 200000 and 16384), and false when it names none.
// A server that runs a model with a shorter window than the model is
// declared with says so this way.
func OverflowLimit(text string) (int, bool) {
	if len(text) > maxHay {
		text = text[:maxHay]
	}
	for _, re := range overflowLimitRes {
		if m := re.FindStringSubmatch(text); m != nil {
			if n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", "")); err == nil && n > 0 {
				return n, true
			}
		}
	}
	return 0, false
}
