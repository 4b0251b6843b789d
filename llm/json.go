package llm

import (
	"bytes"
	"encoding/json"
	"sync"
)

// MarshalJSON encodes v as json.Marshal does, except that <, > and & are
// written as they are rather than as \u003c, \u003e and \u0026, as
// JavaScript's JSON.stringify writes them. Every JSON line agentloop writes
// (events, transcripts, tool arguments) goes through it, so code and markup
// in messages stay readable, and pi's tools read our transcripts byte for
// byte as they would their own. It costs what json.Marshal does: the
// encoders are reused, and the result is the one allocation.
func MarshalJSON(v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err // the encoder is dropped, whatever state it is in
	}
	b := e.buf.Bytes()
	out := bytes.Clone(b[:len(b)-1]) // Encode ends the value with a newline
	if e.buf.Cap() <= maxPooledBuffer {
		encoders.Put(e)
	}
	return out, nil
}

// maxPooledBuffer keeps a transcript's one huge message from pinning its
// buffer in the pool.
const maxPooledBuffer = 64 << 10

type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}
