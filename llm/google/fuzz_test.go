package google_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
)

// FuzzStream feeds arbitrary bodies to the decoder: it must never panic or
// hang, must end every stream with exactly one terminal event (or one bare
// error), and must keep partial tool arguments valid JSON.
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
		n, terminal := 0, 0
		for ev, err := range m.Stream(context.Background(), simpleRequest()) {
			n++
			if err != nil {
				if n != 1 {
					t.Fatalf("bare error after %d events", n-1)
				}
				continue
			}
			if n == 1 && ev.Type != llm.EventStart {
				t.Fatalf("first event %s", ev.Type)
			}
			if terminal > 0 {
				t.Fatalf("event %s after the terminal event", ev.Type)
			}
			if ev.Type.Terminal() {
				terminal++
				if ev.Message == nil || (ev.Type == llm.EventError && ev.Err == nil) {
					t.Fatalf("terminal event without message or error: %+v", ev)
				}
				for _, c := range ev.Message.ToolCalls() {
					if !json.Valid(c.Arguments) {
						t.Fatalf("final arguments %q", c.Arguments)
					}
				}
			}
			if ev.Type == llm.EventToolCallDelta && !json.Valid(ev.Partial.Content[ev.ContentIndex].Arguments) {
				t.Fatalf("partial arguments %q", ev.Partial.Content[ev.ContentIndex].Arguments)
			}
		}
		if n > 1 && terminal != 1 {
			t.Fatalf("%d events, %d terminal", n, terminal)
		}
	})
}
