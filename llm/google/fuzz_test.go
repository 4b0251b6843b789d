package google_test

import (
	"net/http"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// FuzzStream feeds arbitrary bodies to the decoder: it must never panic or
// hang, and must keep the event contract (wiretest.CheckStream).
func FuzzStream(f *testing.F) {
	wiretest.Seeds(f)
	f.Fuzz(func(t *testing.T, body string) {
		m := google.New(google.Config{Info: llm.ModelInfo{ID: "fuzz", Provider: "google"}, HTTPClient: &http.Client{Transport: replay(body)}})
		wiretest.CheckStream(t, m)
	})
}
