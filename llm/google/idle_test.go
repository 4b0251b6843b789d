package google_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
)

// pipeTransport answers with a body that serve writes, in memory, so the
// stream can run inside a synctest bubble on fake time. Cancelling the
// request closes the body, as net/http does. headers false holds the
// response back until the request is cancelled.
type pipeTransport struct {
	headers bool
	serve   func(w io.Writer, done <-chan struct{})
}

func (p pipeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !p.headers {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	pr, pw := io.Pipe()
	go func() {
		<-req.Context().Done()
		pw.CloseWithError(req.Context().Err())
	}()
	go func() {
		p.serve(pw, req.Context().Done())
		pw.Close()
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
}

// The default idle timeout (120 s) fires on a stream that only sends SSE
// comments after its first chunk, however many: they do not reset it.
func TestIdleTimeoutFakeClock(t *testing.T) {
	tests := []struct {
		name    string
		headers bool
		bare    bool
	}{
		{"keep-alives after the start", true, false},
		{"no response headers", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := pipeTransport{headers: tt.headers, serve: func(w io.Writer, done <-chan struct{}) {
					if _, err := io.WriteString(w, firstEvent); err != nil {
						return
					}
					tick := time.NewTicker(10 * time.Second)
					defer tick.Stop()
					for {
						select {
						case <-done:
							return
						case <-tick.C:
							if _, err := io.WriteString(w, keepAlive); err != nil {
								return
							}
						}
					}
				}}
				m := google.New(google.Config{Info: llm.ModelInfo{ID: "m"}, HTTPClient: &http.Client{Transport: tr}})
				start := time.Now()
				r := collect(t, m, context.Background(), simpleRequest())
				if took := time.Since(start); took != google.DefaultIdleTimeout {
					t.Errorf("gave up after %v, want %v", took, google.DefaultIdleTimeout)
				}
				var pe *llm.ProviderError
				if r.bare != tt.bare || !errors.As(r.err, &pe) || pe.Reason != llm.ReasonTimeout {
					t.Fatalf("bare %v err %v", r.bare, r.err)
				}
				if !tt.bare && r.msg.StopReason != llm.StopReasonError {
					t.Errorf("stop %q", r.msg.StopReason)
				}
			})
		})
	}
}

const (
	firstEvent = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hi\"}],\"role\": \"model\"}}]}\n\n"
	keepAlive  = ": keep-alive\n\n"
)
