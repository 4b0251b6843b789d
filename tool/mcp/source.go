package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/agentloop/agentloop/tool"
)

// Source is the MCP servers of Config as a tool.Source: each run that uses
// it starts them (Start), offers the tools of those that are ready, and
// stops them when it ends.
type Source struct {
	Config  Config
	Options *Options
}

// Start starts the servers. One that fails is left out, and named in the
// Warnings of the returned Closer (a *Manager).
func (s *Source) Start(ctx context.Context) ([]tool.Tool, io.Closer, error) {
	var o Options
	if s.Options != nil {
		o = *s.Options
	}
	if o.Logger == nil {
		// Failures are reported as warnings of the run.
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := Start(ctx, s.Config, &o)
	if err != nil {
		return nil, nil, fmt.Errorf("start MCP servers: %w", err)
	}
	return m.Tools(), m, nil
}

// Warnings names the servers that are not available, and why.
func (m *Manager) Warnings() []string {
	var out []string
	for _, st := range m.Status() {
		if st.State != StateReady {
			from := ""
			if st.Source != "" {
				from = " (from " + st.Source + ")"
			}
			out = append(out, fmt.Sprintf("MCP server %s%s is not available: %v; its tools are left out", st.Name, from, st.Err))
		}
	}
	return out
}
