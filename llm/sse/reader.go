package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// DefaultMaxEventSize is the size limit of one event (its data plus the
// line being read) when Reader.MaxEventSize is 0.
const DefaultMaxEventSize = 8 << 20

// ErrEventTooLarge is returned when an event exceeds the reader's size
// limit. The stream cannot be resumed after it.
var ErrEventTooLarge = errors.New("sse: event exceeds the size limit")

// Event is one dispatched server-sent event.
type Event struct {
	// Type is the event field; "message" when the event had none.
	Type string
	// Data is the data fields joined by "\n". It aliases the reader's
	// buffer and is valid only until the next call of Next.
	Data []byte
	// ID is the last event id seen on the stream (it persists across
	// events, as the specification says).
	ID string
	// Retry is the reconnection time in milliseconds the server asked
	// for, or -1 when this event carried no valid retry field.
	Retry int
}

// Done reports whether the event's data is the "[DONE]" sentinel of the
// OpenAI-style streams.
func (e *Event) Done() bool { return string(e.Data) == "[DONE]" }

// Reader reads events from a stream. It does no I/O beyond the reads of
// the underlying reader and does not start goroutines.
type Reader struct {
	// MaxEventSize limits the bytes of one event; 0 means
	// DefaultMaxEventSize.
	MaxEventSize int
	// Comments counts the comment lines skipped so far.
	Comments int

	r         io.Reader
	buf       []byte
	start     int
	end       int
	err       error // sticky read error
	skipLF    bool  // the last line ended in CR: a following LF belongs to it
	started   bool  // a byte-order mark may only come first
	truncated bool
	full      bool // the last read filled buf

	long    []byte // a line that spans buffer refills
	data    []byte
	hasData bool
	typ     string
	id      string
	retry   int
	types   map[string]string // interned event names
}

// The read buffer starts small, as most replies are a few kilobytes, and
// doubles while reads fill it, up to maxBuffer.
const (
	minBuffer = 2 << 10
	maxBuffer = 32 << 10
)

// NewReader returns a reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r, buf: make([]byte, minBuffer), retry: -1}
}

func (r *Reader) limit() int {
	if r.MaxEventSize > 0 {
		return r.MaxEventSize
	}
	return DefaultMaxEventSize
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// read errors are returned as they come. An event whose final blank line
// is missing at the end of the stream is still dispatched, and so is a last
// line without its line end (Truncated then reports true).
func (r *Reader) Next() (Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && r.hasData {
				// The last event lacked its blank line: dispatch it.
				return r.dispatch(), nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if r.hasData {
				return r.dispatch(), nil
			}
			r.typ = ""
			continue
		}
		if err := r.field(line); err != nil {
			return Event{}, err
		}
	}
}

// Truncated reports whether the stream ended in the middle of a line, as a
// cut connection does. The last event returned may then be incomplete.
func (r *Reader) Truncated() bool { return r.truncated }

func (r *Reader) dispatch() Event {
	data := r.data
	if n := len(data); n > 0 && data[n-1] == '\n' {
		data = data[:n-1]
	}
	typ := r.typ
	if typ == "" {
		typ = "message"
	}
	e := Event{Type: typ, Data: data, ID: r.id, Retry: r.retry}
	r.data = r.data[:0]
	r.hasData = false
	r.typ = ""
	r.retry = -1
	return e
}

func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		r.Comments++
		return nil
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if len(r.data)+len(value)+1 > r.limit() {
			return fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, r.limit())
		}
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
		r.hasData = true
	case "event":
		r.typ = r.intern(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = string(value)
		}
	case "retry":
		if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 && isDigits(value) {
			r.retry = n
		}
	}
	return nil
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// intern returns a string for an event name without allocating for the
// names seen before.
func (r *Reader) intern(b []byte) string {
	if s, ok := r.types[string(b)]; ok {
		return s
	}
	s := string(b)
	if r.types == nil {
		r.types = make(map[string]string)
	}
	if len(r.types) < 64 {
		r.types[s] = s
	}
	return s
}

var bom = []byte("\xef\xbb\xbf")

// readLine returns the next line without its terminator. The slice is
// valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	r.long = r.long[:0]
	for {
		if r.skipLF && r.start < r.end {
			if r.buf[r.start] == '\n' {
				r.start++
			}
			r.skipLF = false
		}
		chunk := r.buf[r.start:r.end]
		i := bytes.IndexByte(chunk, '\n')
		probe := chunk
		if i >= 0 {
			probe = chunk[:i]
		}
		if j := bytes.IndexByte(probe, '\r'); j >= 0 {
			i = j
		}
		if i >= 0 {
			line := chunk[:i]
			r.start += i + 1
			if chunk[i] == '\r' {
				if r.start < r.end {
					if r.buf[r.start] == '\n' {
						r.start++
					}
				} else {
					r.skipLF = true
				}
			}
			if len(r.long) > 0 {
				r.long = append(r.long, line...)
				line = r.long
			}
			if !r.started {
				r.started = true
				line = bytes.TrimPrefix(line, bom)
			}
			return line, nil
		}
		// No line end in the buffer: keep what is there and read more.
		if len(chunk) > 0 {
			if len(r.long)+len(chunk)+len(r.data) > r.limit() {
				return nil, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, r.limit())
			}
			r.long = append(r.long, chunk...)
		}
		r.start, r.end = 0, 0
		if r.err != nil {
			if r.err == io.EOF && len(r.long) > 0 {
				// The last line has no line end: take it as it is, and
				// let the caller know the stream may have been cut.
				r.truncated = true
				line := r.long
				if !r.started {
					r.started = true
					line = bytes.TrimPrefix(line, bom)
				}
				r.long = r.long[len(r.long):]
				return line, nil
			}
			return nil, r.err
		}
		if r.full && len(r.buf) < maxBuffer {
			// The last read filled the buffer, which is empty now: the
			// stream comes faster than the buffer holds, so give it room.
			r.buf = make([]byte, 2*len(r.buf))
		}
		n, err := r.r.Read(r.buf)
		r.end = n
		r.err = err
		r.full = n == len(r.buf)
	}
}
