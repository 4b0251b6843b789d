package auth_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/llm"
)

// A rejected key cools its profile down; the next call picks the other
// profile, and when both are out the caller fails over.
func ExampleStore_Select() {
	dir, _ := os.MkdirTemp("", "auth-example")
	defer os.RemoveAll(dir)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store, _ := auth.Open(&auth.Config{Path: filepath.Join(dir, "auth-state.json"), Clock: clock.At(func() time.Time { return now })})
	ids := []string{"work", "spare"}

	id, _ := store.Select("anthropic", "claude-sonnet-4-5", ids, "")
	fmt.Println("using", id)
	store.MarkFailure("anthropic", id, "claude-sonnet-4-5", llm.ReasonAuth)
	id, _ = store.Select("anthropic", "claude-sonnet-4-5", ids, id)
	fmt.Println("using", id)
	store.MarkFailure("anthropic", id, "claude-sonnet-4-5", llm.ReasonBilling)
	_, err := store.Select("anthropic", "claude-sonnet-4-5", ids, "")
	fmt.Println(errors.Is(err, auth.ErrExhausted))
	// Output:
	// using work
	// using spare
	// true
}

// The table of `agentloop auth status`.
func ExampleWriteStatus() {
	dir, _ := os.MkdirTemp("", "auth-example")
	defer os.RemoveAll(dir)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store, _ := auth.Open(&auth.Config{Path: filepath.Join(dir, "auth-state.json"), Clock: clock.At(func() time.Time { return now })})
	mf, _ := llm.ParseModelsFile("models.json", []byte(`{"providers": {"anthropic": {"profiles": [{"id": "work", "apiKey": "KEY_A"}, {"id": "spare", "apiKey": "KEY_B"}]}}}`))
	store.MarkFailure("anthropic", "work", "claude-sonnet-4-5", llm.ReasonRateLimit)
	statuses, _ := store.Status(mf)
	for _, s := range statuses {
		if s.State == auth.StateOK {
			fmt.Println(s.Profile, s.State)
			continue
		}
		fmt.Println(s.Profile, s.State, s.Reason, "on", s.Model, "for", s.Until.Sub(now))
	}
	// Output:
	// work cooldown rate_limit on claude-sonnet-4-5 for 30s
	// spare ok
}
