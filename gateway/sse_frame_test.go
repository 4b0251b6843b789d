package gateway

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// Writing an event to an SSE stream allocates nothing: it runs once per
// event and per open stream, so garbage here is garbage per delivered
// event.
func TestWriteFrameAllocatesNothing(t *testing.T) {
	f := frame{seq: 123456, typ: "message_update", runID: "run_x",
		data: []byte(`{"v":2,"type":"message_update","seq":123456,"runId":"run_x","sessionId":"s","turn":1,"event":"text_delta","contentIndex":0,"delta":"Hello, wor"}`)}
	bw := bufio.NewWriterSize(io.Discard, 32<<10)
	if n := testing.AllocsPerRun(100, func() { writeFrame(bw, f) }); n != 0 {
		t.Fatalf("writeFrame allocates %v times per frame, want 0", n)
	}
}

// A frame is one SSE message: its id, its event type, its JSON as data
// lines (one per line, should the JSON ever hold a newline), a blank line.
func TestWriteFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    frame
		want string
	}{
		{"one line", frame{seq: 7, typ: "run_end", data: []byte(`{"a":1}`)}, "id: 7\nevent: run_end\ndata: {\"a\":1}\n\n"},
		{"no id", frame{seq: 7, typ: "approval_requested", data: []byte(`{}`), noID: true}, "event: approval_requested\ndata: {}\n\n"},
		{"newlines", frame{seq: 1, typ: "x", data: []byte("a\nb\n")}, "id: 1\nevent: x\ndata: a\ndata: b\ndata: \n\n"},
		{"empty", frame{seq: 2, typ: "x"}, "id: 2\nevent: x\ndata: \n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			bw := bufio.NewWriter(&buf)
			writeFrame(bw, tc.f)
			bw.Flush()
			if got := buf.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
