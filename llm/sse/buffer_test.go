package sse

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// Issue 20.4: a reply of a few events keeps a small read buffer; a fast,
// long stream grows it, to maxBuffer at most, and every event still
// arrives whole, the ones across the buffer's growth included.
func TestReadBufferFollowsTheStream(t *testing.T) {
	short := NewReader(strings.NewReader("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	for {
		if _, err := short.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if len(short.buf) > minBuffer {
		t.Errorf("a short reply's buffer grew to %d bytes", len(short.buf))
	}

	var sb strings.Builder
	const n = 5000
	for i := range n {
		fmt.Fprintf(&sb, "event: delta\ndata: {\"i\":%d,\"text\":%q}\n\n", i, strings.Repeat("x", i%300))
	}
	long := NewReader(strings.NewReader(sb.String()))
	for i := range n {
		ev, err := long.Next()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("{\"i\":%d,\"text\":%q}", i, strings.Repeat("x", i%300)); string(ev.Data) != want || ev.Type != "delta" {
			t.Fatalf("event %d: %q %q", i, ev.Type, ev.Data)
		}
	}
	if len(long.buf) != maxBuffer {
		t.Errorf("a long fast stream's buffer is %d bytes; want %d", len(long.buf), maxBuffer)
	}
}
