package wire

import (
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// SiteConfig is what every wire's Config says about where and how its
// requests go, with the wire's defaults for what it leaves empty.
type SiteConfig struct {
	Info        llm.ModelInfo
	BaseURL     string
	HTTPClient  *http.Client
	IdleTimeout time.Duration
	Headers     map[string]string

	// DefaultProvider, DefaultBaseURL and DefaultIdle replace an empty
	// Info.Provider, an empty BaseURL and an IdleTimeout that is not
	// positive.
	DefaultProvider string
	DefaultBaseURL  string
	DefaultIdle     time.Duration
	// Endpoint makes the request URL from the base URL (trailing slashes
	// cut, the default applied).
	Endpoint func(base string) string
}

// Site is where and how one model's requests go, with the defaults
// applied.
type Site struct {
	Provider string // Info.Provider, or the wire's default
	Model    string // Info.ID
	Endpoint string
	// Client is the configured client, or one without an overall timeout
	// (streams are bounded by the idle timer and the context).
	Client *http.Client
	Idle   time.Duration
	// Headers are the configured extra headers, copied.
	Headers map[string]string
}

// NewSite applies the defaults of c. The headers are copied, so later
// changes to the caller's map do not reach the site.
func NewSite(c SiteConfig) Site {
	s := Site{Provider: c.Info.Provider, Model: c.Info.ID, Client: c.HTTPClient, Idle: c.IdleTimeout, Headers: maps.Clone(c.Headers)}
	base := strings.TrimRight(c.BaseURL, "/")
	if base == "" {
		base = c.DefaultBaseURL
	}
	s.Endpoint = c.Endpoint(base)
	if s.Client == nil {
		s.Client = &http.Client{}
	}
	if s.Idle <= 0 {
		s.Idle = c.DefaultIdle
	}
	if s.Provider == "" {
		s.Provider = c.DefaultProvider
	}
	return s
}

// Post describes a streamed request to the site with the wire's own
// headers; the configured ones are sent after them and win.
func (s *Site) Post(headers map[string]string) *Post {
	return &Post{
		Provider: s.Provider, Model: s.Model, Client: s.Client, Endpoint: s.Endpoint, Idle: s.Idle,
		Headers: headers, Extra: s.Headers,
	}
}
