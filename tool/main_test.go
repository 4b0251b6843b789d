package tool

import (
	"testing"

	"go.uber.org/goleak"
)

// LineAsker reads its input on a goroutine of its own; nothing may outlive
// the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
