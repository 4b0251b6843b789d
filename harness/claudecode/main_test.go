package claudecode

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if sc := os.Getenv(fakeEnv); sc != "" {
		os.Exit(fakeClaude(sc))
	}
	goleak.VerifyTestMain(m)
}
