package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/openai"
)

// Streaming a reply from a compatible server: text arrives as deltas, the
// done event carries the whole message with its usage.
func ExampleModel_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{"content":" there."},"finish_reason":"stop"}]}`+"\n\n"+
			`data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}`+"\n\n"+
			"data: [DONE]\n\n")
	}))
	defer srv.Close()

	m := openai.New(openai.Config{
		Info:    llm.ModelInfo{ID: "qwen3", Provider: "vllm"},
		BaseURL: srv.URL + "/v1",
	})
	req := &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}
	for ev, err := range m.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case llm.EventTextDelta:
			fmt.Printf("delta %q\n", ev.Delta)
		case llm.EventDone:
			fmt.Printf("done: %q, %d in, %d out, stop %s\n", ev.Message.Text(), ev.Message.Usage.Input, ev.Message.Usage.Output, ev.Message.StopReason)
		case llm.EventError:
			fmt.Println("failed:", ev.Err)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	// Output:
	// delta "Hello"
	// delta " there."
	// done: "Hello there.", 12 in, 3 out, stop stop
}
