package sessiontest_test

import (
	"testing"

	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/session/sessiontest"
)

// A backend's tests run the suite with a fresh store per subtest.
func ExampleRun() {
	_ = func(t *testing.T) {
		sessiontest.Run(t, func(t *testing.T) session.Store {
			return &session.JSONLStore{Dir: t.TempDir()}
		})
	}
}
