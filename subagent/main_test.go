package subagent

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		crashHelper() // the process a test kills; it never returns
	}
	goleak.VerifyTestMain(m)
}
