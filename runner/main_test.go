package runner

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeFromEnv() // the test binary as an MCP server (toolsearch_test.go)
	goleak.VerifyTestMain(m)
}

// testRunner is a Runner for cfg (nil: the defaults), for the tests that
// drive a run with the merged params directly.
func testRunner(cfg *Config) *Runner {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	r, err := New(c)
	if err != nil {
		panic(err)
	}
	return r
}

// errOf is the error of an agent event (hook_error, agent_end).
func errOf(e Event) error {
	if e.Agent == nil {
		return nil
	}
	return e.Agent.Err
}
