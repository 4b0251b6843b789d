// Package provider turns a model spec such as "anthropic/claude-sonnet-4-5",
// "openai/gpt-5", "ollama/qwen3", "openrouter/anthropic/claude-sonnet-4.5",
// "faux/demo" or "<models-file provider>/<id>" into a ready llm.Model and
// the llm.ModelInfo that describes it (window, output limit, prices).
//
// Resolution reads, in this order of precedence:
//
//   - the options given by the caller (--base-url, an explicit models file,
//     the thinking level);
//   - the models file ($AGENTLOOP_HOME/models.json unless a path is given),
//     for providers, models, keys and headers;
//   - the environment: the usual key variables (ANTHROPIC_API_KEY,
//     OPENAI_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY, OPENROUTER_API_KEY,
//     GROQ_API_KEY, DEEPSEEK_API_KEY, ...) and base URLs (ANTHROPIC_BASE_URL,
//     OPENAI_BASE_URL);
//   - the built-in registry (llm.LookupModel).
//
// With no spec, the first provider whose key is set is taken, in the order
// anthropic, openai, google, openrouter, with the default model of
// DefaultModels. A model id the registry does not know still works: it gets
// conservative limits (llm.DefaultContextWindow, llm.DefaultMaxTokens, text
// input only, unknown prices) and a warning.
//
// The api of a model picks its wire: anthropic-messages (llm/anthropic),
// openai-completions and openai-responses (llm/openai), google-generative-ai
// (llm/google). Built-in OpenAI models use Chat Completions; a models file
// entry may choose the Responses API.
//
// Every wire model comes wrapped in the stream middleware of llm/wrap, with
// the layers wrap.For gives its provider; a models file may override them
// per provider or model with "compat": {"wrap": {"promote": true, ...}}.
//
// provider sits above the wire packages (llm/anthropic, llm/openai,
// llm/google), llm/wrap and llm/faux, and imports only them and llm. The
// CLI and the runner import it.
package provider
