// Package vectortest reads the reference vectors (OpenClaw's own test
// cases, as JSON) for the tests that run them through adapters. The vectors
// live in shared/reference/vectors beside the checkout, where CI has them;
// AGENTLOOP_VECTORS names another directory (the full acceptance set has the
// same shape). A test that cannot find them is skipped with a message, never
// failed. Mutate and MutateField make the copy of the vectors with
// expected values flipped that TestMutationCheck (opt-in:
// AGENTLOOP_MUTATION_CHECK=1) runs every adapter on, to show that no
// adapter passes a case it does not check. It imports only the standard
// library.
package vectortest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is where the vectors are read from: $AGENTLOOP_VECTORS, or
// shared/reference/vectors beside the checkout.
func Dir() string {
	if d := os.Getenv("AGENTLOOP_VECTORS"); d != "" {
		return d
	}
	_, here, _, _ := runtime.Caller(0) // <checkout>/internal/vectortest/vectortest.go
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "shared", "reference", "vectors")
}

// Read returns the contents of one vector file, or skips t when the vectors
// are not there.
func Read(t testing.TB, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), file))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("reference vectors not available (%v): they live in shared/reference/vectors beside the checkout; set AGENTLOOP_VECTORS to their directory", err)
	}
	if err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	return data
}
