package session

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The crash and lock tests re-execute this binary as their child.
	switch os.Getenv(childEnv) {
	case "crash":
		crashChild()
		return
	case "lock":
		lockChild()
		return
	}
	goleak.VerifyTestMain(m)
}
