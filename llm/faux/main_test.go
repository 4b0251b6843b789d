package faux_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The demo tests run the agent loop, which starts goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
