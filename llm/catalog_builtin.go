package llm

import "sync"

// The built-in models. Figures (context window, output limit, USD prices per
// million tokens for input, output, cache read and cache write) are as of
// 2026-11-29, taken from the providers' published model tables as collected
// by models.dev (the catalogue pi-ai 0.73.1 ships). Prices change: a models
// file entry for the same provider and id overrides these.
//
// OpenAI's general models are listed with the Chat Completions wire
// (openai-completions), which every compatible server shares; the models
// that only the Responses API serves (the -pro and -codex lines) use
// openai-responses.

// Default API roots of the built-in providers.
const (
	AnthropicBaseURL  = "https://api.anthropic.com"
	OpenAIBaseURL     = "https://api.openai.com/v1"
	GoogleBaseURL     = "https://generativelanguage.googleapis.com/v1beta"
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
	GroqBaseURL       = "https://api.groq.com/openai/v1"
	DeepSeekBaseURL   = "https://api.deepseek.com"
	OllamaBaseURL     = "http://127.0.0.1:11434/v1"
)

var (
	textOnly      = []string{"text"}
	textAndImages = []string{"text", "image"}
)

// spec is one row of the tables below.
type spec struct {
	id, name           string
	window, max        int
	in, out, read, wrt float64
	reasoning, images  bool
	aliases            []string
}

func expand(provider string, api API, baseURL string, rows []spec) []ModelInfo {
	var out []ModelInfo
	for _, r := range rows {
		in := textOnly
		if r.images {
			in = textAndImages
		}
		m := ModelInfo{
			ID: r.id, Name: r.name, Provider: provider, API: api, BaseURL: baseURL,
			ContextWindow: r.window, MaxTokens: r.max,
			Cost:      Prices{Input: r.in, Output: r.out, CacheRead: r.read, CacheWrite: r.wrt},
			Reasoning: r.reasoning, Input: in,
		}
		out = append(out, m)
		for _, a := range r.aliases {
			m.ID = a
			out = append(out, m)
		}
	}
	return out
}

// builtinModels is built on first use, not at package initialisation.
var builtinModels = sync.OnceValue(func() []ModelInfo {
	return concat(
		expand("anthropic", APIAnthropicMessages, AnthropicBaseURL, []spec{
			{id: "claude-opus-4-7", name: "Claude Opus 4.7", window: 1000000, max: 128000, in: 5, out: 25, read: 0.5, wrt: 6.25, reasoning: true, images: true},
			{id: "claude-opus-4-6", name: "Claude Opus 4.6", window: 1000000, max: 128000, in: 5, out: 25, read: 0.5, wrt: 6.25, reasoning: true, images: true},
			{id: "claude-opus-4-5", name: "Claude Opus 4.5", window: 200000, max: 64000, in: 5, out: 25, read: 0.5, wrt: 6.25, reasoning: true, images: true, aliases: []string{"claude-opus-4-5-20251101"}},
			{id: "claude-opus-4-1", name: "Claude Opus 4.1", window: 200000, max: 32000, in: 15, out: 75, read: 1.5, wrt: 18.75, reasoning: true, images: true, aliases: []string{"claude-opus-4-1-20250805"}},
			{id: "claude-opus-4-0", name: "Claude Opus 4", window: 200000, max: 32000, in: 15, out: 75, read: 1.5, wrt: 18.75, reasoning: true, images: true, aliases: []string{"claude-opus-4-20250514"}},
			{id: "claude-sonnet-4-6", name: "Claude Sonnet 4.6", window: 1000000, max: 64000, in: 3, out: 15, read: 0.3, wrt: 3.75, reasoning: true, images: true},
			{id: "claude-sonnet-4-5", name: "Claude Sonnet 4.5", window: 200000, max: 64000, in: 3, out: 15, read: 0.3, wrt: 3.75, reasoning: true, images: true, aliases: []string{"claude-sonnet-4-5-20250929"}},
			{id: "claude-sonnet-4-0", name: "Claude Sonnet 4", window: 200000, max: 64000, in: 3, out: 15, read: 0.3, wrt: 3.75, reasoning: true, images: true, aliases: []string{"claude-sonnet-4-20250514"}},
			{id: "claude-haiku-4-5", name: "Claude Haiku 4.5", window: 200000, max: 64000, in: 1, out: 5, read: 0.1, wrt: 1.25, reasoning: true, images: true, aliases: []string{"claude-haiku-4-5-20251001"}},
		}),
		expand("openai", APIOpenAICompletions, OpenAIBaseURL, []spec{
			{id: "gpt-5.5", name: "GPT-5.5", window: 272000, max: 128000, in: 5, out: 30, read: 0.5, reasoning: true, images: true},
			{id: "gpt-5.4", name: "GPT-5.4", window: 272000, max: 128000, in: 2.5, out: 15, read: 0.25, reasoning: true, images: true},
			{id: "gpt-5.4-mini", name: "GPT-5.4 mini", window: 400000, max: 128000, in: 0.75, out: 4.5, read: 0.075, reasoning: true, images: true},
			{id: "gpt-5.4-nano", name: "GPT-5.4 nano", window: 400000, max: 128000, in: 0.2, out: 1.25, read: 0.02, reasoning: true, images: true},
			{id: "gpt-5.2", name: "GPT-5.2", window: 400000, max: 128000, in: 1.75, out: 14, read: 0.175, reasoning: true, images: true},
			{id: "gpt-5.1", name: "GPT-5.1", window: 400000, max: 128000, in: 1.25, out: 10, read: 0.125, reasoning: true, images: true},
			{id: "gpt-5", name: "GPT-5", window: 400000, max: 128000, in: 1.25, out: 10, read: 0.125, reasoning: true, images: true},
			{id: "gpt-5-mini", name: "GPT-5 mini", window: 400000, max: 128000, in: 0.25, out: 2, read: 0.025, reasoning: true, images: true},
			{id: "gpt-5-nano", name: "GPT-5 nano", window: 400000, max: 128000, in: 0.05, out: 0.4, read: 0.005, reasoning: true, images: true},
			{id: "gpt-4.1", name: "GPT-4.1", window: 1047576, max: 32768, in: 2, out: 8, read: 0.5, images: true},
			{id: "gpt-4.1-mini", name: "GPT-4.1 mini", window: 1047576, max: 32768, in: 0.4, out: 1.6, read: 0.1, images: true},
			{id: "gpt-4.1-nano", name: "GPT-4.1 nano", window: 1047576, max: 32768, in: 0.1, out: 0.4, read: 0.025, images: true},
			{id: "gpt-4o", name: "GPT-4o", window: 128000, max: 16384, in: 2.5, out: 10, read: 1.25, images: true},
			{id: "gpt-4o-mini", name: "GPT-4o mini", window: 128000, max: 16384, in: 0.15, out: 0.6, read: 0.075, images: true},
			{id: "o3", name: "o3", window: 200000, max: 100000, in: 2, out: 8, read: 0.5, reasoning: true, images: true},
			{id: "o4-mini", name: "o4-mini", window: 200000, max: 100000, in: 1.1, out: 4.4, read: 0.275, reasoning: true, images: true},
			{id: "o3-mini", name: "o3-mini", window: 200000, max: 100000, in: 1.1, out: 4.4, read: 0.55, reasoning: true},
		}),
		expand("openai", APIOpenAIResponses, OpenAIBaseURL, []spec{
			{id: "gpt-5.5-pro", name: "GPT-5.5 pro", window: 1050000, max: 128000, in: 30, out: 180, reasoning: true, images: true},
			{id: "gpt-5.4-pro", name: "GPT-5.4 pro", window: 1050000, max: 128000, in: 30, out: 180, reasoning: true, images: true},
			{id: "gpt-5.2-pro", name: "GPT-5.2 pro", window: 400000, max: 128000, in: 21, out: 168, reasoning: true, images: true},
			{id: "gpt-5-pro", name: "GPT-5 pro", window: 400000, max: 272000, in: 15, out: 120, reasoning: true, images: true},
			{id: "gpt-5.3-codex", name: "GPT-5.3 Codex", window: 400000, max: 128000, in: 1.75, out: 14, read: 0.175, reasoning: true, images: true},
			{id: "gpt-5.2-codex", name: "GPT-5.2 Codex", window: 400000, max: 128000, in: 1.75, out: 14, read: 0.175, reasoning: true, images: true},
			{id: "gpt-5.1-codex", name: "GPT-5.1 Codex", window: 400000, max: 128000, in: 1.25, out: 10, read: 0.125, reasoning: true, images: true},
			{id: "gpt-5.1-codex-max", name: "GPT-5.1 Codex Max", window: 400000, max: 128000, in: 1.25, out: 10, read: 0.125, reasoning: true, images: true},
			{id: "gpt-5.1-codex-mini", name: "GPT-5.1 Codex mini", window: 400000, max: 128000, in: 0.25, out: 2, read: 0.025, reasoning: true, images: true},
			{id: "gpt-5-codex", name: "GPT-5 Codex", window: 400000, max: 128000, in: 1.25, out: 10, read: 0.125, reasoning: true, images: true},
		}),
		expand("google", APIGoogleGenerativeAI, GoogleBaseURL, []spec{
			{id: "gemini-3.1-pro-preview", name: "Gemini 3.1 Pro (preview)", window: 1048576, max: 65536, in: 2, out: 12, read: 0.2, reasoning: true, images: true},
			{id: "gemini-3-pro-preview", name: "Gemini 3 Pro (preview)", window: 1000000, max: 64000, in: 2, out: 12, read: 0.2, reasoning: true, images: true},
			{id: "gemini-3-flash-preview", name: "Gemini 3 Flash (preview)", window: 1048576, max: 65536, in: 0.5, out: 3, read: 0.05, reasoning: true, images: true},
			{id: "gemini-3.1-flash-lite-preview", name: "Gemini 3.1 Flash-Lite (preview)", window: 1048576, max: 65536, in: 0.25, out: 1.5, read: 0.025, reasoning: true, images: true},
			{id: "gemini-2.5-pro", name: "Gemini 2.5 Pro", window: 1048576, max: 65536, in: 1.25, out: 10, read: 0.125, reasoning: true, images: true},
			{id: "gemini-2.5-flash", name: "Gemini 2.5 Flash", window: 1048576, max: 65536, in: 0.3, out: 2.5, read: 0.03, reasoning: true, images: true},
			{id: "gemini-2.5-flash-lite", name: "Gemini 2.5 Flash-Lite", window: 1048576, max: 65536, in: 0.1, out: 0.4, read: 0.025, reasoning: true, images: true},
		}),
		expand("openrouter", APIOpenAICompletions, OpenRouterBaseURL, []spec{
			{id: "anthropic/claude-opus-4.7", name: "Claude Opus 4.7 (OpenRouter)", window: 1000000, max: 128000, in: 5, out: 25, read: 0.5, wrt: 6.25, reasoning: true, images: true},
			{id: "anthropic/claude-opus-4.6", name: "Claude Opus 4.6 (OpenRouter)", window: 1000000, max: 128000, in: 5, out: 25, read: 0.5, wrt: 6.25, reasoning: true, images: true},
			{id: "anthropic/claude-opus-4.5", name: "Claude Opus 4.5 (OpenRouter)", window: 200000, max: 64000, in: 5, out: 25, read: 0.5, wrt: 6.25, reasoning: true, images: true},
			{id: "anthropic/claude-sonnet-4.6", name: "Claude Sonnet 4.6 (OpenRouter)", window: 1000000, max: 128000, in: 3, out: 15, read: 0.3, wrt: 3.75, reasoning: true, images: true},
			{id: "anthropic/claude-sonnet-4.5", name: "Claude Sonnet 4.5 (OpenRouter)", window: 1000000, max: 64000, in: 3, out: 15, read: 0.3, wrt: 3.75, reasoning: true, images: true},
			{id: "anthropic/claude-haiku-4.5", name: "Claude Haiku 4.5 (OpenRouter)", window: 200000, max: 64000, in: 1, out: 5, read: 0.1, wrt: 1.25, reasoning: true, images: true},
			{id: "openai/gpt-5.5", name: "GPT-5.5 (OpenRouter)", window: 1050000, max: 128000, in: 5, out: 30, read: 0.5, reasoning: true, images: true},
			{id: "openai/gpt-5.4", name: "GPT-5.4 (OpenRouter)", window: 1050000, max: 128000, in: 2.5, out: 15, read: 0.25, reasoning: true, images: true},
			{id: "openai/gpt-5.4-mini", name: "GPT-5.4 mini (OpenRouter)", window: 400000, max: 128000, in: 0.75, out: 4.5, read: 0.075, reasoning: true, images: true},
			{id: "openai/gpt-5", name: "GPT-5 (OpenRouter)", window: 400000, max: 128000, in: 1.25, out: 10, read: 0.125, reasoning: true, images: true},
			{id: "openai/gpt-5-mini", name: "GPT-5 mini (OpenRouter)", window: 400000, max: 128000, in: 0.25, out: 2, read: 0.025, reasoning: true, images: true},
			{id: "openai/gpt-4.1", name: "GPT-4.1 (OpenRouter)", window: 1047576, max: 32768, in: 2, out: 8, read: 0.5, images: true},
			{id: "google/gemini-3.1-pro-preview", name: "Gemini 3.1 Pro (OpenRouter)", window: 1048576, max: 65536, in: 2, out: 12, read: 0.2, wrt: 0.375, reasoning: true, images: true},
			{id: "google/gemini-3-flash-preview", name: "Gemini 3 Flash (OpenRouter)", window: 1048576, max: 65536, in: 0.5, out: 3, read: 0.05, wrt: 0.0833, reasoning: true, images: true},
			{id: "google/gemini-2.5-pro", name: "Gemini 2.5 Pro (OpenRouter)", window: 1048576, max: 65536, in: 1.25, out: 10, read: 0.125, wrt: 0.375, reasoning: true, images: true},
			{id: "google/gemini-2.5-flash", name: "Gemini 2.5 Flash (OpenRouter)", window: 1048576, max: 65535, in: 0.3, out: 2.5, read: 0.03, wrt: 0.0833, reasoning: true, images: true},
			{id: "deepseek/deepseek-v4-pro", name: "DeepSeek V4 Pro (OpenRouter)", window: 1048576, max: 384000, in: 0.435, out: 0.87, read: 0.003625, reasoning: true},
			{id: "deepseek/deepseek-v4-flash", name: "DeepSeek V4 Flash (OpenRouter)", window: 1048576, max: 384000, in: 0.14, out: 0.28, read: 0.0028, reasoning: true},
			{id: "deepseek/deepseek-v3.2", name: "DeepSeek V3.2 (OpenRouter)", window: 131072, max: 65536, in: 0.252, out: 0.378, read: 0.0252, reasoning: true},
			{id: "qwen/qwen3-coder", name: "Qwen3 Coder (OpenRouter)", window: 262144, max: 65536, in: 0.22, out: 1.8},
			{id: "moonshotai/kimi-k2.6", name: "Kimi K2.6 (OpenRouter)", window: 262144, max: 16384, in: 0.75, out: 3.5, read: 0.15, reasoning: true, images: true},
			{id: "z-ai/glm-4.6", name: "GLM 4.6 (OpenRouter)", window: 204800, max: 204800, in: 0.39, out: 1.9, reasoning: true},
			{id: "x-ai/grok-4", name: "Grok 4 (OpenRouter)", window: 256000, max: 4096, in: 3, out: 15, read: 0.75, reasoning: true, images: true},
		}),
		expand("groq", APIOpenAICompletions, GroqBaseURL, []spec{
			{id: "openai/gpt-oss-120b", name: "GPT OSS 120B (Groq)", window: 131072, max: 65536, in: 0.15, out: 0.6, reasoning: true},
			{id: "openai/gpt-oss-20b", name: "GPT OSS 20B (Groq)", window: 131072, max: 65536, in: 0.075, out: 0.3, reasoning: true},
			{id: "llama-3.3-70b-versatile", name: "Llama 3.3 70B (Groq)", window: 131072, max: 32768, in: 0.59, out: 0.79},
			{id: "llama-3.1-8b-instant", name: "Llama 3.1 8B (Groq)", window: 131072, max: 131072, in: 0.05, out: 0.08},
			{id: "meta-llama/llama-4-maverick-17b-128e-instruct", name: "Llama 4 Maverick (Groq)", window: 131072, max: 8192, in: 0.2, out: 0.6, images: true},
			{id: "meta-llama/llama-4-scout-17b-16e-instruct", name: "Llama 4 Scout (Groq)", window: 131072, max: 8192, in: 0.11, out: 0.34, images: true},
			{id: "moonshotai/kimi-k2-instruct-0905", name: "Kimi K2 (Groq)", window: 262144, max: 16384, in: 1, out: 3},
			{id: "qwen/qwen3-32b", name: "Qwen3 32B (Groq)", window: 131072, max: 40960, in: 0.29, out: 0.59, reasoning: true},
		}),
		expand("deepseek", APIOpenAICompletions, DeepSeekBaseURL, []spec{
			{id: "deepseek-v4-pro", name: "DeepSeek V4 Pro", window: 1000000, max: 384000, in: 0.435, out: 0.87, read: 0.003625, reasoning: true},
			{id: "deepseek-v4-flash", name: "DeepSeek V4 Flash", window: 1000000, max: 384000, in: 0.14, out: 0.28, read: 0.0028, reasoning: true},
		}),
	)
})

func concat(parts ...[]ModelInfo) []ModelInfo {
	var out []ModelInfo
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// DefaultBaseURL returns the API root of a built-in provider (anthropic,
// openai, google, openrouter, groq, deepseek, ollama), or "".
func DefaultBaseURL(provider string) string {
	switch provider {
	case "anthropic":
		return AnthropicBaseURL
	case "openai":
		return OpenAIBaseURL
	case "google":
		return GoogleBaseURL
	case "openrouter":
		return OpenRouterBaseURL
	case "groq":
		return GroqBaseURL
	case "deepseek":
		return DeepSeekBaseURL
	case "ollama":
		return OllamaBaseURL
	}
	return ""
}

// DefaultAPI returns the wire format of a built-in provider, or "".
func DefaultAPI(provider string) API {
	switch provider {
	case "anthropic":
		return APIAnthropicMessages
	case "google":
		return APIGoogleGenerativeAI
	case "openai", "openrouter", "groq", "deepseek", "ollama":
		return APIOpenAICompletions
	}
	return ""
}
