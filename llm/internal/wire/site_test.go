package wire_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
)

func TestNewSite(t *testing.T) {
	client := &http.Client{}
	defaults := wire.SiteConfig{
		DefaultProvider: "acme", DefaultBaseURL: "https://api.acme.test/v2", DefaultIdle: time.Minute,
		Endpoint: func(base string) string { return base + "/chat" },
	}
	tests := []struct {
		name                    string
		info                    llm.ModelInfo
		base                    string
		client                  *http.Client
		idle                    time.Duration
		provider, endpoint      string
		wantIdle                time.Duration
		sameClient, freshClient bool
	}{
		{name: "all defaults", info: llm.ModelInfo{ID: "m1"},
			provider: "acme", endpoint: "https://api.acme.test/v2/chat", wantIdle: time.Minute, freshClient: true},
		{name: "all set", info: llm.ModelInfo{ID: "m1", Provider: "proxy"}, base: "http://localhost:8080/v1//", client: client, idle: time.Second,
			provider: "proxy", endpoint: "http://localhost:8080/v1/chat", wantIdle: time.Second, sameClient: true},
		{name: "negative idle", info: llm.ModelInfo{ID: "m1"}, idle: -time.Second,
			provider: "acme", endpoint: "https://api.acme.test/v2/chat", wantIdle: time.Minute, freshClient: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults
			c.Info, c.BaseURL, c.HTTPClient, c.IdleTimeout = tt.info, tt.base, tt.client, tt.idle
			s := wire.NewSite(c)
			if s.Provider != tt.provider || s.Model != tt.info.ID || s.Endpoint != tt.endpoint || s.Idle != tt.wantIdle {
				t.Errorf("site %+v", s)
			}
			if s.Client == nil || (tt.sameClient && s.Client != client) || (tt.freshClient && s.Client == client) {
				t.Errorf("client %p, configured %p", s.Client, tt.client)
			}
		})
	}
}

func TestSiteHeadersCopied(t *testing.T) {
	h := map[string]string{"X-Extra": "1"}
	s := wire.NewSite(wire.SiteConfig{Headers: h, Endpoint: func(b string) string { return b }})
	h["X-Extra"] = "2"
	p := s.Post(map[string]string{"Accept": "text/event-stream"})
	if p.Extra["X-Extra"] != "1" || p.Headers["Accept"] != "text/event-stream" || p.Client != s.Client || p.Idle != s.Idle {
		t.Errorf("post %+v", p)
	}
	if s := wire.NewSite(wire.SiteConfig{Endpoint: func(b string) string { return b }}); s.Headers != nil {
		t.Errorf("no headers became %v", s.Headers)
	}
}
