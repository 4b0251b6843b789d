package openai

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
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultIdleTimeout is how long a stream may stay silent (no real event;
// SSE comments do not count) before it fails with a timeout.
const DefaultIdleTimeout = 120 * time.Second

// Config describes one Chat Completions endpoint: OpenAI itself or any
// compatible server. The zero values of the optional fields mean the
// defaults documented on each field.
type Config struct {
	// Info names the model and carries its limits and prices.
	Info llm.ModelInfo
	// APIKey is sent as a bearer token when not empty. It never appears in
	// errors or logs.
	APIKey string
	// BaseURL is the API root; "" means DefaultBaseURL. /chat/completions
	// is appended.
	BaseURL string
	// HTTPClient sends the requests; nil means a client without an overall
	// timeout (streams are bounded by the idle timer and the context).
	HTTPClient *http.Client
	// IdleTimeout bounds the silence between real stream events; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Headers are extra request headers.
	Headers map[string]string
	// Compat says what the server accepts; nil means
	// CompatFor(Info.Provider, BaseURL).
	Compat *Compat
}

// Model streams replies from a Chat Completions endpoint. It implements
// llm.Model and is safe for concurrent use.
type Model struct {
	settings
	compat Compat
	// hist keeps the last request's history encoded, for the next turn.
	hist *wire.History[*converter]
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg. The config (and its Compat) is copied; later
// changes to it do not affect the model.
func New(cfg Config) *Model {
	m := &Model{settings: newSettings(cfg, "/chat/completions"), hist: &wire.History[*converter]{}}
	if cfg.Compat != nil {
		m.compat = cfg.Compat.clone()
	} else {
		m.compat = CompatFor(cfg.Info.Provider, cfg.BaseURL)
	}
	return m
}

// settings is what both OpenAI models keep of their Config: the config
// itself (Headers copied, Compat nil) and where and how requests go.
type settings struct {
	cfg  Config
	site wire.Site
}

// newSettings applies the defaults of cfg; path is the API's path under
// the base URL, which may already end in it.
func newSettings(cfg Config, path string) settings {
	s := settings{cfg: cfg, site: wire.NewSite(wire.SiteConfig{
		Info: cfg.Info, BaseURL: cfg.BaseURL, HTTPClient: cfg.HTTPClient, IdleTimeout: cfg.IdleTimeout, Headers: cfg.Headers,
		DefaultProvider: "openai", DefaultBaseURL: DefaultBaseURL, DefaultIdle: DefaultIdleTimeout,
		Endpoint: func(base string) string { return strings.TrimSuffix(base, path) + path },
	})}
	s.cfg.Headers = s.site.Headers
	s.cfg.Compat = nil
	return s
}

// post describes a streamed request to the site, with the key as a bearer
// token.
func (s *settings) post() *wire.Post {
	auth := ""
	if s.cfg.APIKey != "" {
		auth = "Bearer " + s.cfg.APIKey
	}
	return s.site.Post(map[string]string{
		"Content-Type":  "application/json",
		"Accept":        "text/event-stream",
		"Authorization": auth,
	})
}

// Info returns the model's description.
func (m *Model) Info() llm.ModelInfo { return m.cfg.Info }

// Compat returns the compatibility record the model uses.
func (m *Model) Compat() Compat { return m.compat.clone() }

// Stream sends req and streams the reply. See llm.Model for the contract.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return m.stream(ctx, req)
}
