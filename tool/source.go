package tool

import (
	"context"
	"io"
)

// Source is where a run's tools come from besides the caller's own: MCP
// servers, a plugin host. Start starts what the tools need for one run and
// returns them with the Closer that stops it; the run calls Close when it
// ends. A Source that partly failed (one server of several) returns the
// tools it has and, on the Closer, Warnings.
type Source interface {
	Start(ctx context.Context) ([]Tool, io.Closer, error)
}

// Warner is implemented by the Closer of a Source that has something the
// user should know about what it started (a server that is not available).
type Warner interface {
	Warnings() []string
}

// Refresher is implemented by the Closer of a Source whose tools can
// change during a run (MCP servers that send
// notifications/tools/list_changed). Refresh brings its tools up to date
// and returns those that are new; a tool that went away says so through
// AvailableTool, and a call of it gets an error result.
type Refresher interface {
	Refresh(ctx context.Context) ([]Tool, error)
}
