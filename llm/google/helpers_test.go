package google_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "AIzaSyTEST-SECRET-0123456789"

// result is what one Stream produced.
type result struct {
	types []llm.EventType
	// args holds Partial arguments at each toolcall_delta.
	args   []string
	deltas []string
	msg    *llm.Message
	err    error // the bare error before start, or the error event's Err
	bare   bool  // err came before any event
}

func collect(t testing.TB, m llm.Model, ctx context.Context, req *llm.Request) result {
	t.Helper()
	var r result
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			if len(r.types) != 0 {
				t.Fatalf("bare error after %d events: %v", len(r.types), err)
			}
			r.err, r.bare = err, true
			continue
		}
		r.types = append(r.types, ev.Type)
		switch ev.Type {
		case llm.EventToolCallDelta:
			a := ev.Partial.Content[ev.ContentIndex].Arguments
			if !json.Valid(a) {
				t.Fatalf("toolcall_delta: partial arguments %q are not valid JSON", a)
			}
			r.args = append(r.args, string(a))
			r.deltas = append(r.deltas, ev.Delta)
		case llm.EventDone:
			r.msg = ev.Message
		case llm.EventError:
			r.msg, r.err = ev.Message, ev.Err
		}
	}
	return r
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// capture records the last request a server received.
type capture struct {
	header http.Header
	body   []byte
	path   string
	query  string
}

// serve answers every request with status, headers and body.
func serve(t testing.TB, status int, header map[string]string, body string, c *capture) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c != nil {
			c.header = r.Header.Clone()
			c.body, _ = io.ReadAll(r.Body)
			c.path = r.URL.Path
			c.query = r.URL.RawQuery
		}
		if _, ok := header["Content-Type"]; !ok {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newModel(srv *httptest.Server, idle time.Duration) *google.Model {
	return newModelID(srv, idle, "gemini-test")
}

func newModelID(srv *httptest.Server, idle time.Duration, id string) *google.Model {
	return google.New(google.Config{
		Info: llm.ModelInfo{ID: id, Provider: "google", API: llm.APIGoogleGenerativeAI,
			ContextWindow: 1048576, MaxTokens: 65536, Reasoning: true,
			Cost: llm.Prices{Input: 1.25, Output: 10, CacheRead: 0.125}},
		APIKey:      testKey,
		BaseURL:     srv.URL + "/v1beta",
		HTTPClient:  srv.Client(),
		IdleTimeout: idle,
	})
}

func simpleRequest() *llm.Request {
	return &llm.Request{SystemPrompt: "Be brief.", Messages: []llm.Message{llm.UserText("hi")}}
}

func typesString(ts []llm.EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, " ")
}
