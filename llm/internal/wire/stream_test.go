package wire_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
	"github.com/agentloop/agentloop/llm/sse"
)

// body is a transport that answers with a fixed event stream, in memory.
type body string

func (s body) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(string(s))), Request: req}, nil
}

// lines is a decoder that turns each event into a text delta and
// finishes on "end".
type lines struct {
	b     *wire.Builder
	i     int
	ended bool // what Ended answers
}

func (d *lines) Event(ev *sse.Event) (bool, error) {
	switch s := string(ev.Data); s {
	case "end":
		d.b.Done(llm.StopReasonStop)
		return true, nil
	case "bad":
		return true, errors.New("bad event")
	default:
		if d.i < 0 {
			d.i, _ = d.b.Begin(llm.Content{Type: llm.ContentText})
		}
		d.b.Text(d.i, s)
		return false, nil
	}
}

func (d *lines) Ended() bool {
	if d.ended {
		d.b.Done(llm.StopReasonStop)
	}
	return d.ended
}

func post(stream string) *wire.Post {
	return &wire.Post{Provider: "p", Model: "m", Client: &http.Client{Transport: body(stream)},
		Endpoint: "http://p.invalid/v1", Idle: time.Minute, Headers: map[string]string{"Accept": "text/event-stream"}}
}

func TestRead(t *testing.T) {
	tests := []struct {
		name, stream string
		ended        bool
		types, text  string
		reason       llm.Reason // of the error, if the stream fails
	}{
		{"finished by an event", "data: a\n\nevent: ping\ndata: x\n\ndata: b\n\ndata: end\n\ndata: ignored\n\n", false,
			"start text_start text_delta text_delta text_end done", "ab", ""},
		{"ended cleanly, complete", "data: a\n\n", true, "start text_start text_delta text_end done", "a", ""},
		{"ended cleanly, incomplete", "data: a\n\n", false, "start text_start text_delta error", "a", llm.ReasonNetwork},
		{"cut mid-line", "data: a\n\ndata: b", true, "start text_start text_delta text_delta error", "ab", llm.ReasonNetwork},
		{"a bad event", "data: a\n\ndata: bad\n\n", false, "start text_start text_delta error", "a", llm.ReasonUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			b := newBuilder(&r)
			x := wire.Open(context.Background(), b, post(tt.stream), map[string]string{"q": "hi"})
			if x == nil {
				t.Fatalf("Open failed: %v", r.errs)
			}
			defer x.Close(b.Finished())
			b.Start()
			wire.Read(x, b, &lines{b: b, i: -1, ended: tt.ended})
			if got := r.types(); got != tt.types {
				t.Fatalf("events\n got %s\nwant %s", got, tt.types)
			}
			last := r.events[len(r.events)-1]
			if last.Message.Text() != tt.text {
				t.Errorf("text %q", last.Message.Text())
			}
			if tt.reason != "" && llm.ClassifyError(last.Err) != tt.reason {
				t.Errorf("error %v: reason %s, want %s", last.Err, llm.ClassifyError(last.Err), tt.reason)
			}
		})
	}
}

func TestOpenFailures(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		body  any
		check func(error) bool
	}{
		{"body that does not encode", context.Background(), make(chan int), func(err error) bool {
			return strings.HasPrefix(err.Error(), "p: encode request")
		}},
		{"cancelled before sending", cancelled, "x", func(err error) bool { return errors.Is(err, context.Canceled) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			b := newBuilder(&r)
			if x := wire.Open(tt.ctx, b, post("data: end\n\n"), tt.body); x != nil {
				x.Close(false)
				t.Fatal("Open succeeded")
			}
			if len(r.events) != 0 || len(r.errs) != 1 || !tt.check(r.errs[0]) {
				t.Fatalf("events %s, errors %v", r.types(), r.errs)
			}
		})
	}
}
