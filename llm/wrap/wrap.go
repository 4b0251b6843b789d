package wrap

import (
	"context"
	"iter"

	"github.com/agentloop/agentloop/llm"
)

// Middleware wraps a model in one layer.
type Middleware func(llm.Model) llm.Model

// Replace is one literal text rewrite: every Old in the reply's text
// becomes New.
type Replace struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// Config selects the layers for one provider. The zero value turns every
// layer off; For gives the usual record for a provider.
type Config struct {
	// Text are the provider's text rewrites, applied to text blocks in
	// order of appearance in the text (layer 1).
	Text []Replace `json:"text,omitempty"`
	// Repair fixes malformed tool-call arguments and drops calls without a
	// name (layer 2).
	Repair bool `json:"repair,omitempty"`
	// Promote turns tool calls written as text into real calls (layer 3).
	Promote bool `json:"promote,omitempty"`
	// Normalize matches tool-call names to the offered tools (layer 4).
	Normalize bool `json:"normalize,omitempty"`
}

// For returns the layers a provider usually needs: repair and name
// normalisation everywhere; promotion of text calls for servers that run
// open models behind the Chat Completions wire (Ollama, vLLM, llama.cpp,
// LM Studio, OpenRouter, Groq, ...), whose chat templates sometimes leak
// calls as text. First-party OpenAI, Anthropic and Gemini models call
// tools natively and do not get promotion, so text that merely quotes a
// call stays text.
func For(provider string, api llm.API) Config {
	c := Config{Repair: true, Normalize: true}
	if api == llm.APIOpenAICompletions && provider != "openai" {
		c.Promote = true
	}
	return c
}

// Layers returns the middleware cfg selects, innermost first.
func (cfg Config) Layers() []Middleware {
	var ms []Middleware
	if len(cfg.Text) > 0 {
		ms = append(ms, TextTransforms(cfg.Text...))
	}
	if cfg.Repair {
		ms = append(ms, RepairToolCalls())
	}
	if cfg.Promote {
		ms = append(ms, PromoteTextToolCalls())
	}
	if cfg.Normalize {
		ms = append(ms, NormalizeToolNames())
	}
	return ms
}

// Wrap returns m wrapped in the layers cfg selects, in the documented
// order. With no layer selected it returns m itself.
func Wrap(m llm.Model, cfg Config) llm.Model {
	return Chain(cfg.Layers()...)(m)
}

// Chain composes middleware, the first innermost: Chain(a, b)(m) is
// b(a(m)).
func Chain(ms ...Middleware) Middleware {
	return func(m llm.Model) llm.Model {
		for _, w := range ms {
			m = w(m)
		}
		return m
	}
}

// layer is the shape every middleware shares: run the inner stream and
// transform its events with a relay of its own.
func layer(inner llm.Model, run func(ctx context.Context, req *llm.Request, in iter.Seq2[llm.Event, error], r *relay)) llm.Model {
	return llm.ModelFunc(func(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
		return func(yield func(llm.Event, error) bool) {
			r := newRelay(yield)
			run(ctx, req, inner.Stream(ctx, req), r)
		}
	})
}
