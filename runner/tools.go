package runner

import (
	"context"
	"fmt"
	"io"

	"github.com/agentloop/agentloop/tool"
)

// startTools starts the Config's tool sources for one run and returns the
// run's registry: own, then each source's tools in order. A source that
// fails to start fails the run; what a source reports (a server that is
// not available) becomes the run's warnings. closeAll stops the sources.
func (s *run) startTools(ctx context.Context, own *tool.Registry) (reg *tool.Registry, closeAll func(), err error) {
	reg = own
	var closers []io.Closer
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i].Close()
		}
	}
	if len(s.p.ToolSources) == 0 {
		return reg, closeAll, nil
	}
	var tools []tool.Tool
	if own != nil {
		tools = own.Tools()
	}
	for _, src := range s.p.ToolSources {
		ts, c, err := src.Start(ctx)
		if c != nil {
			closers = append(closers, c)
		}
		if err != nil {
			closeAll()
			return nil, func() {}, err
		}
		if rf, ok := c.(tool.Refresher); ok {
			s.refreshers = append(s.refreshers, rf)
		}
		s.sourced = append(s.sourced, ts...)
		if w, ok := c.(tool.Warner); ok {
			for _, msg := range w.Warnings() {
				s.warn(msg)
			}
		}
		tools = append(tools, ts...)
	}
	reg, err = tool.NewRegistry(tools...)
	if err != nil {
		closeAll()
		return nil, func() {}, fmt.Errorf("add the tools of the tool sources: %w", err)
	}
	return reg, closeAll, nil
}
