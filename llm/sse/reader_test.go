package sse_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agentloop/agentloop/llm/sse"
)

type ev struct {
	Type, Data, ID string
	Retry          int
}

func readAll(t testing.TB, r io.Reader, max int) ([]ev, *sse.Reader, error) {
	t.Helper()
	rd := sse.NewReader(r)
	rd.MaxEventSize = max
	var out []ev
	for {
		e, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				return out, rd, nil
			}
			return out, rd, err
		}
		out = append(out, ev{e.Type, string(e.Data), e.ID, e.Retry})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      []ev
		comments  int
		truncated bool
	}{
		{"empty", "", nil, 0, false},
		{"one data", "data: hello\n\n", []ev{{"message", "hello", "", -1}}, 0, false},
		{"no space after colon", "data:hello\n\n", []ev{{"message", "hello", "", -1}}, 0, false},
		{"only one space removed", "data:  two\n\n", []ev{{"message", " two", "", -1}}, 0, false},
		{"named event", "event: message_start\ndata: {}\n\n", []ev{{"message_start", "{}", "", -1}}, 0, false},
		{"multi-line data", "data: a\ndata: b\ndata:\n\n", []ev{{"message", "a\nb\n", "", -1}}, 0, false},
		{"CRLF", "event: x\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []ev{{"x", "1", "", -1}, {"message", "2", "", -1}}, 0, false},
		{"lone CR", "data: 1\r\rdata: 2\r\r", []ev{{"message", "1", "", -1}, {"message", "2", "", -1}}, 0, false},
		{"comments skipped and counted", ": OPENROUTER PROCESSING\n\n: ping\ndata: x\n\n", []ev{{"message", "x", "", -1}}, 2, false},
		{"blank lines without data dispatch nothing", "\n\n\nevent: ping\n\n", nil, 0, false},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\n", []ev{{"message", "a", "7", -1}, {"message", "b", "7", -1}}, 0, false},
		{"id with NUL ignored", "id: a\x00b\ndata: a\n\n", []ev{{"message", "a", "", -1}}, 0, false},
		{"retry", "retry: 1500\ndata: a\n\nretry: x1\ndata: b\n\n", []ev{{"message", "a", "", 1500}, {"message", "b", "", -1}}, 0, false},
		{"unknown field ignored", "foo: bar\ndata: a\n\n", []ev{{"message", "a", "", -1}}, 0, false},
		{"field without colon", "data\n\n", []ev{{"message", "", "", -1}}, 0, false},
		{"done sentinel", "data: [DONE]\n\n", []ev{{"message", "[DONE]", "", -1}}, 0, false},
		{"BOM", "\xef\xbb\xbfdata: a\n\n", []ev{{"message", "a", "", -1}}, 0, false},
		{"missing final blank line", "data: a\n", []ev{{"message", "a", "", -1}}, 0, false},
		{"cut mid-line", "data: a\n\ndata: {\"x\":", []ev{{"message", "a", "", -1}, {"message", "{\"x\":", "", -1}}, 0, true},
		{"event type reset after dispatch", "event: a\ndata: 1\n\ndata: 2\n\n", []ev{{"a", "1", "", -1}, {"message", "2", "", -1}}, 0, false},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"bytewise": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"halfwise": func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got, rd, err := readAll(t, mk(tt.in), 0)
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Errorf("events\n got %+v\nwant %+v", got, tt.want)
				}
				if rd.Comments != tt.comments {
					t.Errorf("Comments = %d, want %d", rd.Comments, tt.comments)
				}
				if rd.Truncated() != tt.truncated {
					t.Errorf("Truncated = %v, want %v", rd.Truncated(), tt.truncated)
				}
			})
		}
	}
}

func TestReaderLongLines(t *testing.T) {
	// Lines longer than the internal buffer, split across many reads.
	long := strings.Repeat("x", 100_000)
	in := "data: " + long + "\r\n\r\ndata: short\n\n"
	got, _, err := readAll(t, iotest.HalfReader(strings.NewReader(in)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Data != long || got[1].Data != "short" {
		t.Fatalf("got %d events, first %d bytes", len(got), len(got[0].Data))
	}
}

func TestReaderSizeLimit(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"one long line", "data: " + strings.Repeat("x", 5000) + "\n\n"},
		{"many data lines", strings.Repeat("data: "+strings.Repeat("y", 100)+"\n", 100) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readAll(t, strings.NewReader(tt.in), 1024)
			if !errors.Is(err, sse.ErrEventTooLarge) {
				t.Fatalf("err = %v, want ErrEventTooLarge", err)
			}
		})
	}
	// Events under the limit pass, however many there are.
	in := strings.Repeat("data: "+strings.Repeat("z", 900)+"\n\n", 50)
	got, _, err := readAll(t, strings.NewReader(in), 1024)
	if err != nil || len(got) != 50 {
		t.Fatalf("got %d events, err %v", len(got), err)
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	got, _, err := readAll(t, r, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the read error", err)
	}
	if len(got) != 1 || got[0].Data != "a" {
		t.Fatalf("events before the error = %v", got)
	}
}

func TestEventDone(t *testing.T) {
	for in, want := range map[string]bool{"[DONE]": true, " [DONE]": false, "{}": false, "": false} {
		e := sse.Event{Data: []byte(in)}
		if e.Done() != want {
			t.Errorf("Done(%q) = %v", in, !want)
		}
	}
}

func ExampleReader() {
	stream := ": keep-alive\n" +
		"event: content_block_delta\n" +
		"data: {\"text\":\"Hi\"}\n\n" +
		"data: [DONE]\n\n"
	r := sse.NewReader(strings.NewReader(stream))
	for {
		e, err := r.Next()
		if err != nil || e.Done() {
			break
		}
		fmt.Printf("%s %s\n", e.Type, e.Data)
	}
	fmt.Println("comments:", r.Comments)
	// Output:
	// content_block_delta {"text":"Hi"}
	// comments: 1
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "event: x\r\ndata: 1\r\n\r\n", "data: 1\r\rdata: 2\r\r", ": c\n\n",
		"\xef\xbb\xbfdata: a\n\n", "id: 1\nretry: 20\ndata: a\ndata: b\n\n", "data: [DONE]", "data:{\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		whole, _, err1 := readAll(t, strings.NewReader(in), 1<<16)
		bytewise, _, err2 := readAll(t, iotest.OneByteReader(strings.NewReader(in)), 1<<16)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v vs %v", err1, err2)
		}
		if err1 == nil && fmt.Sprint(whole) != fmt.Sprint(bytewise) {
			t.Fatalf("read whole %+v\nread bytewise %+v", whole, bytewise)
		}
	})
}

func BenchmarkReader(b *testing.B) {
	var sb strings.Builder
	const events = 1000
	for i := 0; i < events; i++ {
		fmt.Fprintf(&sb, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"token %d \"}}\n\n", i)
	}
	in := sb.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	rd := strings.NewReader(in)
	b.ResetTimer()
	for b.Loop() {
		rd.Reset(in)
		r := sse.NewReader(rd)
		n := 0
		for {
			_, err := r.Next()
			if err != nil {
				break
			}
			n++
		}
		if n != events {
			b.Fatalf("read %d events", n)
		}
	}
	b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
}
