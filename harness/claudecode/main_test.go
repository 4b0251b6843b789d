package claudecode

import (
	"testing"

	"go.uber.org/goleak"
)

// A turn reads Claude Code's output on goroutines of its own; nothing may
// outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
