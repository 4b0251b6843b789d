package anthropic

import (
	"context"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
)

// DefaultBaseURL is where requests go when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultIdleTimeout is how long a stream may stay silent (no real event;
// pings and SSE comments do not count) before it fails with a timeout.
const DefaultIdleTimeout = 120 * time.Second

// APIVersion is the anthropic-version header every request carries.
const APIVersion = "2023-06-01"

// InterleavedThinkingBeta is the anthropic-beta value sent when thinking is
// on and tools are offered. A "anthropic-beta" entry in Config.Headers
// replaces it.
const InterleavedThinkingBeta = "interleaved-thinking-2025-05-14"

// Config describes one Anthropic model endpoint. The zero values of the
// optional fields mean the defaults documented on each field.
type Config struct {
	// Info names the model and carries its limits and prices (ID, Provider,
	// ContextWindow, MaxTokens, Cost, Reasoning, Input).
	Info llm.ModelInfo
	// APIKey is sent as x-api-key. It never appears in errors or logs.
	APIKey string
	// BaseURL is the API root; "" means DefaultBaseURL. /v1/messages is
	// appended.
	BaseURL string
	// HTTPClient sends the requests; nil means a client without an overall
	// timeout (streams are bounded by the idle timer and the context).
	HTTPClient *http.Client
	// IdleTimeout bounds the silence between real stream events; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Headers are extra request headers, sent after the defaults (so they
	// can override anthropic-version or add anthropic-beta).
	Headers map[string]string
	// EagerToolInput is pi's supportsEagerToolInputStreaming: true marks
	// every tool eager_input_streaming, so its input streams as it is
	// written; false asks for the same with the fine-grained tool
	// streaming beta, for endpoints that do not take the field; nil sends
	// neither.
	EagerToolInput *bool
}

// FineGrainedToolStreamingBeta is the anthropic-beta value that streams
// tool input unbuffered, sent when EagerToolInput is false.
const FineGrainedToolStreamingBeta = "fine-grained-tool-streaming-2025-05-14"

// Model streams replies from the Anthropic Messages API. It implements
// llm.Model and is safe for concurrent use.
type Model struct {
	cfg  Config // Headers copied
	site wire.Site
	// hist keeps the last request's settled turns encoded, for the next.
	hist *wire.History[*histState]
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg. The config is copied; later changes to it do
// not affect the model.
func New(cfg Config) *Model {
	m := &Model{cfg: cfg, site: wire.NewSite(wire.SiteConfig{
		Info: cfg.Info, BaseURL: cfg.BaseURL, HTTPClient: cfg.HTTPClient, IdleTimeout: cfg.IdleTimeout, Headers: cfg.Headers,
		DefaultProvider: "anthropic", DefaultBaseURL: DefaultBaseURL, DefaultIdle: DefaultIdleTimeout,
		Endpoint: func(base string) string {
			// Accept a base URL that already ends in /v1, as
			// ANTHROPIC_BASE_URL values sometimes do.
			return strings.TrimSuffix(base, "/v1") + "/v1/messages"
		},
	})}
	m.cfg.Headers = m.site.Headers
	m.hist = &wire.History[*histState]{}
	return m
}

// Info returns the model's description.
func (m *Model) Info() llm.ModelInfo { return m.cfg.Info }

// Stream sends req and streams the reply. See llm.Model for the contract.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return m.stream(ctx, req)
}
