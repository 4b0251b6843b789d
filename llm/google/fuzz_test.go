package google_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// FuzzStream feeds arbitrary bodies to the decoder: it must never panic or
// hang, and must keep the event contract (wiretest.CheckStream).
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, body string) {
		m := google.New(google.Config{Info: llm.ModelInfo{ID: "fuzz", Provider: "google"}, HTTPClient: &http.Client{Transport: replay(body)}})
		wiretest.CheckStream(t, m)
	})
}
