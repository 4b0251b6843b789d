package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/tool"
)

// A server that sends notifications/tools/list_changed is marked stale;
// its tools are listed again at the next Refresh (the runner asks before
// every model call), not in the notification's handler, which runs on the
// connection's own goroutine and must not wait on it.

// toolsChanged is the client's handler of notifications/tools/list_changed.
func (s *server) toolsChanged() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
}

// Available reports whether the tool can be called now: its server is
// running and still lists it.
func (t *Tool) Available() bool {
	s := t.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == StateReady && !t.removed
}

// Refresh lists again the tools of the servers that said their list
// changed, and returns the tools that are new. A tool a server no longer
// lists stays known but is not Available, and a call of it gets an error
// result saying it was removed; one listed again is available again.
func (m *Manager) Refresh(ctx context.Context) ([]tool.Tool, error) {
	var added []tool.Tool
	var errs []error
	for _, s := range m.servers {
		n, err := s.refresh(ctx)
		added = append(added, n...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return added, errors.Join(errs...)
}

func (s *server) refresh(ctx context.Context) ([]tool.Tool, error) {
	s.mu.Lock()
	stale, cs := s.stale && s.state == StateReady, s.session
	s.stale = false
	s.mu.Unlock()
	if !stale {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.m.opts.CallTimeout)
	defer cancel()
	var listed []*Tool
	seen := map[string]bool{}
	s.mu.Lock()
	known := make(map[string]*Tool, len(s.known))
	for k, v := range s.known {
		known[k] = v
	}
	s.mu.Unlock()
	var added []tool.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			s.toolsChanged() // try again at the next refresh
			return nil, fmt.Errorf("MCP server %s: list its tools again: %w", s.name, err)
		}
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		if k := known[t.Name]; k != nil {
			listed = append(listed, k)
			continue
		}
		nt := newTool(s, t)
		listed = append(listed, nt)
		added = append(added, nt)
	}
	s.mu.Lock()
	for name, t := range s.known {
		t.removed = !seen[name]
	}
	for _, t := range listed {
		s.known[t.remote] = t
	}
	s.tools = listed
	s.mu.Unlock()
	return added, nil
}
