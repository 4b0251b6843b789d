package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/sse"
)

// Post describes the streamed POST request of one call.
type Post struct {
	Provider, Model string
	Client          *http.Client
	Endpoint        string
	// Idle bounds the silence between real events; it must be positive.
	Idle time.Duration
	// Headers are the wire's own headers (empty values are not sent);
	// Extra, the configured ones, are set after them and win.
	Headers, Extra map[string]string
	// AcceptJSON takes a whole JSON reply from a server that does not
	// stream (see Exchange.AcceptJSON). Call sets it when its decoder can
	// read one.
	AcceptJSON bool
}

// Open encodes body as JSON (an Encoded body is sent as it is), posts it
// and checks the response. On success the caller owns the exchange and
// must Close it. On failure Open reports the error through b (before the
// start event, so as a bare error) and returns nil.
func Open(ctx context.Context, b *Builder, p *Post, body any) *Exchange {
	var req *http.Request
	var err error
	if enc, ok := body.(Encoded); ok {
		// Sent as is: a known length (no chunked encoding), and a body
		// that can be read again for a redirect or a retried connection.
		req, err = http.NewRequest(http.MethodPost, p.Endpoint, enc.reader())
		if err == nil {
			req.ContentLength = enc.size()
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(enc.reader()), nil }
		}
	} else {
		data, merr := json.Marshal(body)
		if merr != nil {
			b.Fail(fmt.Errorf("%s: encode request: %w", p.Provider, merr))
			return nil
		}
		req, err = http.NewRequest(http.MethodPost, p.Endpoint, bytes.NewReader(data))
	}
	if ctx.Err() != nil {
		b.Fail(AbortError(ctx))
		return nil
	}
	if err != nil {
		b.Fail(fmt.Errorf("%s: build request: %w", p.Provider, err))
		return nil
	}
	SetHeaders(req.Header, p.Headers, p.Extra)
	x := NewExchange(ctx, p.Provider, p.Model, p.Idle)
	x.AcceptJSON = p.AcceptJSON
	if err := x.Do(p.Client, req); err != nil {
		x.Close(false)
		b.Fail(err)
		return nil
	}
	return x
}

// Call runs one streamed call: it opens it, and once the server has
// accepted it emits the start event and decodes the reply with d, then
// closes the exchange, handing the connection back when the reply was
// complete. A d that is also a WholeDecoder gets a reply sent as one JSON
// document (Post.AcceptJSON is set for it); any other d, only streams.
func Call(ctx context.Context, b *Builder, p *Post, body any, d Decoder) {
	w, whole := d.(WholeDecoder)
	p.AcceptJSON = whole
	x := Open(ctx, b, p, body)
	if x == nil {
		return
	}
	// A cut reply's server is still sending: its connection goes.
	defer func() { x.Close(b.Finished() && !b.Capped()) }()
	if !b.Start() {
		return
	}
	if x.JSONBody != nil {
		w.Whole(x.JSONBody)
		return
	}
	Read(x, b, d)
}

// WholeDecoder is a Decoder that can also read a reply that came as one
// JSON document from a server that did not stream.
type WholeDecoder interface {
	Decoder
	// Whole decodes the document, finishing or failing the reply through
	// the Builder.
	Whole(body []byte)
}

// Decoder is a wire's reading of the events of its stream.
type Decoder interface {
	// Event handles one event. finished says the reply is over: the
	// decoder has called Done, or err says why the stream failed.
	Event(ev *sse.Event) (finished bool, err error)
	// Ended is called when the body ends cleanly before an event
	// finished the reply; it reports whether the reply was complete all
	// the same, having called Done (or Fail, for a complete reply that
	// reports a failure, as a withheld one does).
	Ended() bool
}

// Read reads the event stream of x into d until the reply is finished,
// the stream fails or the consumer stops, and reports failures through b.
// Every event resets the idle timer but "ping" events, which are
// keep-alives, as comments are.
func Read(x *Exchange, b *Builder, d Decoder) {
	r := sse.NewReader(x.Body)
	// One event variable for the whole stream: passing its address to the
	// decoder (an interface) moves it to the heap, once instead of once
	// an event.
	var ev sse.Event
	for {
		var err error
		ev, err = r.Next()
		if err != nil {
			switch {
			case x.ctx.Err() != nil:
				// Cancelled or idle: that is the cause, whatever the read saw.
				err = x.Failure(err)
			case err == io.EOF && !r.Truncated() && d.Ended():
				return
			case err == io.EOF:
				err = Truncated(x.provider, x.model)
			case errors.Is(err, sse.ErrEventTooLarge):
				err = TooLarge(x.provider, x.model, err)
			default:
				err = x.Failure(err)
			}
			b.Fail(err)
			return
		}
		if ev.Type == "ping" {
			continue
		}
		x.Touch()
		finished, err := d.Event(&ev)
		if err != nil {
			if r.Truncated() {
				// A cut connection, not a bad event.
				err = Truncated(x.provider, x.model)
			}
			b.Fail(err)
			return
		}
		if b.Capped() {
			// The reply went past its output limit: it ends there, as
			// the provider should have ended it.
			b.Done(llm.StopReasonLength)
			return
		}
		if finished || b.Stopped() {
			return
		}
	}
}
