package openai_test

import (
	"net/http"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
	"github.com/agentloop/agentloop/llm/openai"
)

// FuzzStream feeds arbitrary bodies to both decoders (Chat Completions and
// Responses): they must never panic or hang, and must keep the event
// contract (wiretest.CheckStream).
func FuzzStream(f *testing.F) {
	wiretest.Seeds(f)
	f.Fuzz(func(t *testing.T, body string) {
		cfg := openai.Config{Info: llm.ModelInfo{ID: "fuzz", Provider: "openai"}, HTTPClient: &http.Client{Transport: replay(body)}}
		wiretest.CheckStream(t, openai.New(cfg))
		wiretest.CheckStream(t, openai.NewResponses(cfg))
	})
}
