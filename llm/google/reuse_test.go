package google_test

import (
	"net/http/httptest"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// A finished stream hands its connection back: consecutive calls share one.
func TestConnectionReuse(t *testing.T) {
	wiretest.ConnectionReuse(t, func(srv *httptest.Server) llm.Model { return newModel(srv, 0) }, fixture(t, "text.sse"))
}
