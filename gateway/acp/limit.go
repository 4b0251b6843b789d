package acp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// maxMessage is the longest line, its newline included, that
// github.com/coder/acp-go-sdk v0.13.5 reads: its bufio.Scanner stops at
// 10 MiB and a longer line ends the whole connection, without a word to
// the editor. The SDK does not let us raise it, so a longer message never
// reaches it: the editor gets an error answer and the connection, with its
// sessions, goes on.
const maxMessage = 10 << 20

// lineLimit passes the editor's messages (JSON lines) through whole, and
// drops every one longer than max, handing tooLong the top level of what
// it skimmed (to find its id and method) and its size.
type lineLimit struct {
	r       *bufio.Reader
	max     int
	tooLong func(h *head, size int)
	line    []byte // the line being handed out
	off     int
	err     error // after line
}

func newLineLimit(r io.Reader, max int, tooLong func(*head, int)) *lineLimit {
	return &lineLimit{r: bufio.NewReaderSize(r, 64<<10), max: max, tooLong: tooLong}
}

func (l *lineLimit) Read(p []byte) (int, error) {
	for l.off >= len(l.line) {
		if l.err != nil {
			return 0, l.err
		}
		l.next()
	}
	n := copy(p, l.line[l.off:])
	l.off += n
	return n, nil
}

// next reads the next line that fits into l.line, or the end into l.err.
func (l *lineLimit) next() {
	if cap(l.line) > 1<<20 {
		l.line = nil // a big message's buffer is not kept for the small ones
	}
	l.line, l.off = l.line[:0], 0
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(l.line)+len(chunk) > l.max {
			h := &head{}
			h.Write(l.line)
			h.Write(chunk)
			size := len(l.line) + len(chunk)
			for err == bufio.ErrBufferFull {
				chunk, err = l.r.ReadSlice('\n')
				h.Write(chunk)
				size += len(chunk)
			}
			l.line = l.line[:0]
			l.tooLong(h, size)
			if err != nil {
				l.err = err
				return
			}
			continue
		}
		l.line = append(l.line, chunk...)
		switch err {
		case nil:
			return
		case bufio.ErrBufferFull:
			continue
		default:
			l.err = err
			return
		}
	}
}

// head keeps the top level of a JSON object read a byte at a time, each
// nested value as null and each long string as "", so a message too big to
// keep still tells its id and method, in bounded memory.
type head struct {
	out        []byte
	depth      int
	inStr, esc bool
	strStart   int
	cut        bool // the current top-level string is too long: it stays ""
}

const (
	headMax    = 4 << 10
	headStrMax = 256
)

func (h *head) Write(b []byte) {
	for _, c := range b {
		h.byte(c)
	}
}

// emit keeps c when it is of the top level.
func (h *head) emit(c byte) {
	if h.depth == 1 {
		h.put(c)
	}
}

func (h *head) put(c byte) {
	if !h.cut && len(h.out) < headMax {
		h.out = append(h.out, c)
	}
}

func (h *head) byte(c byte) {
	if h.inStr {
		switch {
		case h.esc:
			h.esc = false
		case c == '\\':
			h.esc = true
		case c == '"':
			h.inStr = false
			if h.cut {
				h.cut = false
				h.out = append(h.out[:h.strStart], '"')
			}
		}
		h.emit(c)
		if h.depth == 1 && !h.cut && h.inStr && len(h.out)-h.strStart > headStrMax {
			h.out = append(h.out[:h.strStart], '"')
			h.cut = true
		}
		return
	}
	switch c {
	case '"':
		h.inStr = true
		h.strStart = len(h.out)
		h.emit(c)
	case '{', '[':
		h.depth++
		switch h.depth {
		case 1:
			h.put(c)
		case 2: // a nested value is kept as null
			for _, b := range []byte("null") {
				h.put(b)
			}
		}
	case '}', ']':
		h.emit(c)
		h.depth--
	case ' ', '\t', '\r', '\n':
	default:
		h.emit(c)
	}
}

// message is the id and method of what was skimmed; a nil id when it has
// none or the skim is no JSON.
func (h *head) message() (id json.RawMessage, method string) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(h.out, &m) != nil {
		return nil, ""
	}
	return m.ID, m.Method
}

// lockedWriter makes each Write one whole message on out: the SDK writes a
// message in one Write, and so do we for the answers lineLimit causes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// tooLongError is the answer to a request longer than maxMessage.
func tooLongError(id json.RawMessage, method string, size int) []byte {
	what := "the message"
	if method != "" {
		what = "the " + method + " request"
	}
	msg := fmt.Sprintf("%s is %.1f MiB (%d bytes): agentloop acp reads messages of at most %d MiB (%d bytes, the limit of the ACP library it uses); "+
		"attach a large file by its path (a resource link) instead of pasting it", what, float64(size)/(1<<20), size, maxMessage>>20, maxMessage)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32600, "message": msg}})
	return append(b, '\n')
}
