package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/anthropic"
)

// A failed call is a classified *llm.ProviderError: decide on its Reason,
// never on its text.
func ExampleModel_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	defer srv.Close()

	m := anthropic.New(anthropic.Config{Info: llm.ModelInfo{ID: "claude-sonnet-4-5"}, BaseURL: srv.URL})
	req := &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}
	for _, err := range m.Stream(context.Background(), req) {
		var pe *llm.ProviderError
		if errors.As(err, &pe) {
			fmt.Println(pe.Reason, pe.Status, pe.RetryAfter)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	// Output: overloaded 529 20s
}
