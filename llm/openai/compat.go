package openai

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"reflect"
	"strings"
)

// Compat records what one Chat Completions server accepts, so that the
// differences between OpenAI and compatible servers live in data, not in
// ifs through the code. Its JSON form matches the "compat" object of pi's
// models.json. To apply a user's partial record over the defaults, decode
// it into the result of CompatFor: fields absent from the JSON keep their
// default.
type Compat struct {
	// SupportsDeveloperRole sends the system prompt as a "developer"
	// message to reasoning models; otherwise it is a "system" message.
	SupportsDeveloperRole bool `json:"supportsDeveloperRole"`
	// SupportsStore sends "store": false, so OpenAI keeps no copy.
	SupportsStore bool `json:"supportsStore"`
	// MaxTokensField is the name of the output cap field:
	// "max_completion_tokens" or "max_tokens".
	MaxTokensField string `json:"maxTokensField"`
	// SupportsUsageInStreaming asks for the final usage-only chunk with
	// stream_options.include_usage.
	SupportsUsageInStreaming bool `json:"supportsUsageInStreaming"`
	// SupportsStrictMode sends "strict": false on each function tool.
	SupportsStrictMode bool `json:"supportsStrictMode"`
	// SupportsReasoningEffort allows a reasoning request for reasoning
	// models, in the shape ThinkingFormat names.
	SupportsReasoningEffort bool `json:"supportsReasoningEffort"`
	// ThinkingFormat is how a reasoning request is sent: "openai"
	// (reasoning_effort), "openrouter" (reasoning.effort), "qwen"
	// (enable_thinking), "zai" (thinking.type) or "deepseek"
	// (thinking.type, and reasoning_effort when thinking is on).
	ThinkingFormat string `json:"thinkingFormat,omitempty"`
	// ReasoningEffortMap renames thinking levels to the server's effort
	// values (for example "minimal" to "low").
	ReasoningEffortMap map[string]string `json:"reasoningEffortMap,omitempty"`
	// RequiresThinkingAsText replays earlier thinking as plain assistant
	// text instead of a reasoning field.
	RequiresThinkingAsText bool `json:"requiresThinkingAsText"`
	// SendReasoningContentBack replays earlier reasoning under the field
	// it arrived in (reasoning_content, reasoning, ...), as DeepSeek
	// requires for assistant turns that called tools. Off, reasoning is
	// left out of the history (most chat templates drop it anyway, and
	// strict servers reject fields they do not know).
	SendReasoningContentBack bool `json:"sendReasoningContentBack"`
	// ReasoningField is the field reasoning is replayed under when the
	// message does not say which one it arrived in; "" means
	// "reasoning_content".
	ReasoningField string `json:"reasoningField,omitempty"`
	// SupportsPromptCacheKey sends the request's session id as
	// prompt_cache_key, which routes repeated prefixes to the same cache.
	SupportsPromptCacheKey bool `json:"supportsPromptCacheKey"`
	// RequiresToolResultName adds the tool's name to each tool message.
	RequiresToolResultName bool `json:"requiresToolResultName"`
	// RequiresAssistantAfterToolResult inserts a short assistant message
	// between tool results and a following user message.
	RequiresAssistantAfterToolResult bool `json:"requiresAssistantAfterToolResult"`
	// OpenRouterRouting is OpenRouter's provider routing preference
	// ({"only": [...], "order": [...]}, and the rest of its fields), sent
	// as the request's "provider" object.
	OpenRouterRouting json.RawMessage `json:"openRouterRouting,omitempty"`
	// VercelGatewayRouting is the Vercel AI Gateway's ({"only", "order"}),
	// sent as providerOptions.gateway.
	VercelGatewayRouting json.RawMessage `json:"vercelGatewayRouting,omitempty"`
}

// Keys lists the JSON names of Compat's fields: the compat keys this wire
// applies.
func (Compat) Keys() []string {
	t := reflect.TypeFor[Compat]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

func (c Compat) clone() Compat {
	c.ReasoningEffortMap = maps.Clone(c.ReasoningEffortMap)
	c.OpenRouterRouting = bytes.Clone(c.OpenRouterRouting)
	c.VercelGatewayRouting = bytes.Clone(c.VercelGatewayRouting)
	return c
}

// generic is what an unknown compatible server gets: only what nearly every
// server accepts.
var generic = Compat{
	MaxTokensField:           "max_tokens",
	SupportsUsageInStreaming: true,
	ThinkingFormat:           "openai",
}

// CompatFor returns the compatibility record for a provider name, or, when
// the name is not one it knows, for the host of baseURL. Known providers:
// openai, ollama, vllm, llama.cpp (also "llamacpp", "llama-cpp"),
// openrouter, groq, deepseek, lmstudio. Anything else gets a conservative
// record (system role, max_tokens, no store, no strict mode).
func CompatFor(provider, baseURL string) Compat {
	switch p := strings.ToLower(strings.TrimSpace(provider)); p {
	case "openai":
		return Compat{
			SupportsDeveloperRole:    true,
			SupportsStore:            true,
			MaxTokensField:           "max_completion_tokens",
			SupportsUsageInStreaming: true,
			SupportsStrictMode:       true,
			SupportsReasoningEffort:  true,
			ThinkingFormat:           "openai",
			SupportsPromptCacheKey:   true,
		}
	case "ollama":
		c := generic
		c.SupportsReasoningEffort = true
		return c
	case "vllm", "llama.cpp", "llamacpp", "llama-cpp", "lmstudio", "lm-studio":
		return generic.clone()
	case "openrouter":
		c := generic
		c.SupportsReasoningEffort = true
		c.ThinkingFormat = "openrouter"
		return c
	case "groq":
		c := generic
		c.MaxTokensField = "max_completion_tokens"
		return c
	case "deepseek":
		c := generic
		c.SendReasoningContentBack = true
		c.ReasoningField = "reasoning_content"
		return c
	case "":
	default:
		if c, ok := compatForHost(baseURL); ok {
			return c
		}
		return generic.clone()
	}
	if c, ok := compatForHost(baseURL); ok {
		return c
	}
	return CompatFor("openai", "")
}

// compatForHost recognises well-known hosts and ports.
func compatForHost(baseURL string) (Compat, bool) {
	if baseURL == "" {
		return Compat{}, false
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return Compat{}, false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	switch {
	case host == "api.openai.com":
		return CompatFor("openai", ""), true
	case strings.HasSuffix(host, "openrouter.ai"):
		return CompatFor("openrouter", ""), true
	case strings.HasSuffix(host, "groq.com"):
		return CompatFor("groq", ""), true
	case strings.HasSuffix(host, "deepseek.com"):
		return CompatFor("deepseek", ""), true
	case port == "11434":
		return CompatFor("ollama", ""), true
	case port == "1234":
		return CompatFor("lmstudio", ""), true
	}
	return Compat{}, false
}
