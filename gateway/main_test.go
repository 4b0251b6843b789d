package gateway

import (
	"testing"

	"github.com/agentloop/agentloop/internal/pgtest"
)

// pg is the PostgreSQL of the cluster tests; its Main checks for leaked
// goroutines after the tests, as goleak.VerifyTestMain did.
var pg pgtest.Shared

func TestMain(m *testing.M) { pg.Main(m) }
