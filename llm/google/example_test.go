package google_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
)

// A streamed Gemini reply: text deltas as they come, then the message with
// its usage (prompt tokens less the cached ones as input, answer plus
// thoughts as output).
func ExampleModel_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]}}]}`+"\r\n\r\n")
		io.WriteString(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":", world."}]},"finishReason":"STOP"}],`+
			`"usageMetadata":{"promptTokenCount":120,"cachedContentTokenCount":100,"candidatesTokenCount":4,"thoughtsTokenCount":6}}`+"\r\n\r\n")
	}))
	defer srv.Close()

	m := google.New(google.Config{Info: llm.ModelInfo{ID: "gemini-2.5-flash"}, APIKey: "key", BaseURL: srv.URL})
	req := &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}
	for ev, err := range m.Stream(context.Background(), req) {
		switch {
		case err != nil:
			fmt.Println(err)
		case ev.Type == llm.EventTextDelta:
			fmt.Printf("%q\n", ev.Delta)
		case ev.Type == llm.EventDone:
			u := ev.Message.Usage
			fmt.Println(ev.Reason, u.Input, u.CacheRead, u.Output)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	// Output:
	// "Hello"
	// ", world."
	// stop 20 100 10
}
