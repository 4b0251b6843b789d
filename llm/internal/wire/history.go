package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"unsafe"

	"github.com/agentloop/agentloop/llm"
)

// Encoded is a request body already encoded as JSON, in pieces that are
// sent one after the other as they are, without being joined.
type Encoded [][]byte

func (e Encoded) size() int64 {
	var n int64
	for _, p := range e {
		n += int64(len(p))
	}
	return n
}

// reader returns a reader over the pieces; it writes them to a
// connection without copying them through a buffer.
func (e Encoded) reader() io.Reader {
	bufs := make(net.Buffers, 0, len(e))
	for _, p := range e {
		if len(p) > 0 {
			bufs = append(bufs, p)
		}
	}
	return &bufs
}

// History keeps, between the requests a model makes, the encoded form of
// the history a request carried, so that the next request of the same
// conversation encodes only the messages appended since. The cache is
// checked, not trusted: each request's leading messages are compared with
// copies of those the cache covers (the fields and content blocks, strings
// by identity first, so the check reads no text twice), and anything
// rewritten in place or replaced (compaction, snip, a repair, another
// conversation) is a miss that starts from scratch. S is the wire's
// conversion state after the covered messages (its CallIDs, the role of
// the last message sent): it must make the encoding of the messages after
// them the same as a whole build's.
//
// One History belongs to one model and holds one conversation: a model
// used by several at once stays correct but rebuilds more often.
type History[S any] struct {
	mu    sync.Mutex
	msgs  []llm.Message
	enc   []byte
	state S
	held  bool
}

// Take returns how many leading messages of msgs the cache covers, their
// encoding (JSON array elements separated by commas, no brackets) and the
// state after them, and empties the cache until Keep. n == 0 means
// starting from scratch: enc is empty and state the zero S. The caller may
// append to enc and change state; they are its own until it calls Keep.
func (h *History[S]) Take(msgs []llm.Message) (n int, enc []byte, state S) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held || len(h.msgs) > len(msgs) {
		h.reset()
		return 0, nil, state
	}
	for i := range h.msgs {
		if !SameMessage(&h.msgs[i], &msgs[i]) {
			h.reset()
			return 0, nil, state
		}
	}
	n, enc, state, cached := len(h.msgs), h.enc, h.state, h.msgs
	h.reset()
	h.msgs = cached // kept for Keep to append to
	return n, enc, state
}

// Keep stores the encoding and state after all of msgs, whose first n
// were covered by the Take that started this build. A build that cannot
// be continued (its state is not one a whole build passes through) calls
// Drop instead.
func (h *History[S]) Keep(msgs []llm.Message, n int, enc []byte, state S) {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.msgs
	if len(kept) != n {
		kept = nil // another build took the cache meanwhile
		if n != 0 {
			h.reset()
			return
		}
	}
	for i := n; i < len(msgs); i++ {
		kept = append(kept, copyMessage(msgs[i]))
	}
	h.msgs, h.enc, h.state, h.held = kept, enc, state, true
}

// Drop empties the cache.
func (h *History[S]) Drop() {
	h.mu.Lock()
	h.reset()
	h.mu.Unlock()
}

func (h *History[S]) reset() {
	var zero S
	h.msgs, h.enc, h.state, h.held = nil, nil, zero, false
}

// copyMessage copies m with its own content blocks, so that a block
// changed in place in the caller's history no longer compares equal.
func copyMessage(m llm.Message) llm.Message {
	m.Content = append([]llm.Content(nil), m.Content...)
	return m
}

// SameMessage reports whether a and b are equal in every field a wire may
// encode. Equal strings that share their bytes compare without reading
// them.
func SameMessage(a, b *llm.Message) bool {
	if a.Role != b.Role || !same(a.Provider, b.Provider) || !same(a.Model, b.Model) || !same(a.API, b.API) ||
		a.StopReason != b.StopReason || !same(a.ErrorMessage, b.ErrorMessage) || !same(a.ToolCallID, b.ToolCallID) ||
		!same(a.ToolName, b.ToolName) || a.IsError != b.IsError || a.Timestamp != b.Timestamp || a.Usage != b.Usage ||
		!sameBytes(a.Details, b.Details) || !sameExtra(a.Extra, b.Extra) || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		x, y := &a.Content[i], &b.Content[i]
		if x.Type != y.Type || !same(x.Text, y.Text) || !same(x.TextSignature, y.TextSignature) || !same(x.Thinking, y.Thinking) ||
			!same(x.ThinkingSignature, y.ThinkingSignature) || x.Redacted != y.Redacted || !same(x.Data, y.Data) ||
			!same(x.MimeType, y.MimeType) || !same(x.ID, y.ID) || !same(x.Name, y.Name) || !same(x.ThoughtSignature, y.ThoughtSignature) ||
			!sameBytes(x.Arguments, y.Arguments) || !sameExtra(x.Extra, y.Extra) {
			return false
		}
	}
	return true
}

// same is a == b, answered without a call when the strings share their
// bytes (the common case: the cached copy holds the caller's strings).
func same[S ~string](a, b S) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(string(a)) == unsafe.StringData(string(b)) || a == b)
}

func sameBytes[B ~[]byte](a, b B) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b))
}

func sameExtra[V ~[]byte](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true // no map iteration for the common case
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !sameBytes(v, w) {
			return false
		}
	}
	return true
}

// Covered returns how many messages the cache covers now.
func (h *History[S]) Covered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return 0
	}
	return len(h.msgs)
}

// Splice returns head, a JSON object whose field key is null, with that
// field's value made the array of the given elements instead: each
// non-empty part is one or more array elements already encoded and
// separated by commas. With no element the field is empty (the encoding
// json.Marshal gives the wire's nil or empty slice: "null" or "[]").
// The head's bytes and the parts are not copied.
func Splice(head []byte, key string, empty string, parts ...[]byte) (Encoded, error) {
	field := `"` + key + `":null`
	i := bytes.Index(head, []byte(field))
	if i < 0 {
		return nil, fmt.Errorf("no %s field in the request head", field)
	}
	at := i + len(field) - len("null")
	body := Encoded{head[:at:at]}
	n := 0
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		if n == 0 {
			body = append(body, openBracket)
		} else {
			body = append(body, comma)
		}
		body = append(body, p)
		n++
	}
	if n == 0 {
		body = append(body, []byte(empty))
	} else {
		body = append(body, closeBracket)
	}
	return append(body, head[at+len("null"):]), nil
}

var openBracket, comma, closeBracket = []byte("["), []byte(","), []byte("]")

// AppendElements appends the JSON encoding of each of elems to enc,
// comma-separated, as an array holds them.
func AppendElements[T any](enc []byte, elems []T) ([]byte, error) {
	for i := range elems {
		b, err := json.Marshal(&elems[i])
		if err != nil {
			return enc, err
		}
		if len(enc) > 0 {
			enc = append(enc, ',')
		}
		enc = append(enc, b...)
	}
	return enc, nil
}
