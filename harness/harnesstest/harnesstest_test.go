package harnesstest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/builtin"
	"github.com/agentloop/agentloop/harness/harnesstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBuiltinConformance(t *testing.T) {
	harnesstest.Run(t, func(*testing.T) harness.Harness { return builtin.Harness{} }, harnesstest.Caps{})
}

func TestFakeConformance(t *testing.T) {
	harnesstest.Run(t, func(*testing.T) harness.Harness { return &harnesstest.Fake{} }, harnesstest.Caps{Native: true})
}
