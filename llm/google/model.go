package google

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
)

// DefaultBaseURL is where requests go when Config.BaseURL is empty.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// DefaultIdleTimeout is how long a stream may stay silent (no real chunk;
// SSE comments do not count) before it fails with a timeout.
const DefaultIdleTimeout = 120 * time.Second

// Config describes one Gemini model endpoint. The zero values of the
// optional fields mean the defaults documented on each field.
type Config struct {
	// Info names the model and carries its limits and prices (ID, Provider,
	// ContextWindow, MaxTokens, Cost, Reasoning, Input).
	Info llm.ModelInfo
	// APIKey is sent as x-goog-api-key, never in the URL. It never appears
	// in errors or logs.
	APIKey string
	// BaseURL is the API root including its version; "" means
	// DefaultBaseURL. /models/{id}:streamGenerateContent?alt=sse is
	// appended.
	BaseURL string
	// HTTPClient sends the requests; nil means a client without an overall
	// timeout (streams are bounded by the idle timer and the context).
	HTTPClient *http.Client
	// IdleTimeout bounds the silence between real stream chunks; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Headers are extra request headers, sent after the defaults.
	Headers map[string]string
}

// Model streams replies from the Gemini API. It implements llm.Model and
// is safe for concurrent use.
type Model struct {
	cfg  Config // Headers copied
	site wire.Site
	// ids numbers synthesised tool-call ids; shared by concurrent streams.
	ids idCounter
	// hist keeps the last request's settled contents encoded, for the
	// next.
	hist *wire.History[*histState]
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg. The config is copied; later changes to it do
// not affect the model.
func New(cfg Config) *Model {
	m := &Model{cfg: cfg, hist: &wire.History[*histState]{}, site: wire.NewSite(wire.SiteConfig{
		Info: cfg.Info, BaseURL: cfg.BaseURL, HTTPClient: cfg.HTTPClient, IdleTimeout: cfg.IdleTimeout, Headers: cfg.Headers,
		DefaultProvider: "google", DefaultBaseURL: DefaultBaseURL, DefaultIdle: DefaultIdleTimeout,
		Endpoint: func(base string) string {
			// Accept a base URL that already names the models collection.
			base = strings.TrimSuffix(base, "/models")
			id := strings.TrimPrefix(cfg.Info.ID, "models/")
			return base + "/models/" + url.PathEscape(id) + ":streamGenerateContent?alt=sse"
		},
	})}
	m.cfg.Headers = m.site.Headers
	return m
}

// Info returns the model's description.
func (m *Model) Info() llm.ModelInfo { return m.cfg.Info }

// Stream sends req and streams the reply. See llm.Model for the contract.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return m.stream(ctx, req)
}
