package auth

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/llm"
	"go.uber.org/goleak"
)

// A test re-executes its own binary as a second process with
// AUTH_TEST_CHILD set: the child marks failures in the state file the
// parent names and exits.
func TestMain(m *testing.M) {
	if os.Getenv("AUTH_TEST_CHILD") != "" {
		os.Exit(child())
	}
	goleak.VerifyTestMain(m)
}

func child() int {
	path := os.Getenv("AUTH_TEST_STATE")
	id := os.Getenv("AUTH_TEST_PROFILE")
	n, _ := strconv.Atoi(os.Getenv("AUTH_TEST_COUNT"))
	now := time.Unix(1_800_000_000, 0)
	s, err := Open(&Config{Path: path, Clock: clock.At(func() time.Time { return now })})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for range n {
		if _, err := s.MarkFailure("anthropic", id, "m", llm.ReasonAuth); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}
