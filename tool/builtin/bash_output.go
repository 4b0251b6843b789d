package builtin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unicode/utf8"
)

const (
	// BashMaxBytes is how much of a command's output the model sees: the
	// last 51,200 bytes (or BashMaxLines lines, whichever is less). The
	// whole output then goes to a spill file.
	BashMaxBytes = 51200
	// BashMaxLines is the line limit of the output the model sees.
	BashMaxLines = 2000
)

// bashOutput collects the merged stdout and stderr of one command: a
// rolling tail in memory and, once the output outgrows what the model may
// see, the whole of it in a spill file.
type bashOutput struct {
	mu       sync.Mutex
	tail     []byte // the last up to 2*BashMaxBytes bytes
	total    int64
	newlines int64
	last     byte

	spillDir  string
	spillName string
	spill     *os.File
	spillPath string
	spillErr  error
}

// Write appends p. It never fails: a spill file that cannot be written is
// reported in the result instead.
func (o *bashOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total += int64(len(p))
	o.newlines += int64(bytes.Count(p, []byte{'\n'}))
	if len(p) > 0 {
		o.last = p[len(p)-1]
	}
	o.tail = append(o.tail, p...)
	if o.spill == nil && o.spillErr == nil && o.total > BashMaxBytes {
		// The tail still holds everything so far: it is only trimmed
		// below, after the spill file has it.
		o.openSpill()
	} else if o.spill != nil {
		o.writeSpill(p)
	}
	if len(o.tail) > 2*BashMaxBytes {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-BashMaxBytes:]...)
	}
	return len(p), nil
}

func (o *bashOutput) openSpill() {
	dir := o.spillDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		o.spillErr = err
		return
	}
	f, err := os.CreateTemp(dir, o.spillName+"-*.log")
	if err != nil {
		o.spillErr = err
		return
	}
	o.spill, o.spillPath = f, f.Name()
	if abs, err := filepath.Abs(o.spillPath); err == nil {
		o.spillPath = abs
	}
	o.writeSpill(o.tail)
}

func (o *bashOutput) writeSpill(p []byte) {
	if _, err := o.spill.Write(p); err != nil && o.spillErr == nil {
		o.spillErr = err
	}
}

// lines is the number of lines written, a last line without a newline
// included.
func (o *bashOutput) lines() int64 {
	n := o.newlines
	if o.total > 0 && o.last != '\n' {
		n++
	}
	return n
}

// view returns what the model sees of the output so far.
func (o *bashOutput) view() bashView {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.viewLocked()
}

// bashView is the visible tail of the output and what was left out.
type bashView struct {
	Text       string
	Truncated  bool
	FirstLine  int64 // line number of the first line shown, 1-based
	LastLine   int64
	TotalLines int64
	TotalBytes int64
	Partial    bool // the first line shown is the end of a longer line
}

func (o *bashOutput) viewLocked() bashView {
	total := o.lines()
	text, shown, partial := bashTail(o.tail, BashMaxLines, BashMaxBytes)
	v := bashView{
		Text:       text,
		TotalLines: total,
		TotalBytes: o.total,
		LastLine:   total,
		FirstLine:  total - int64(shown) + 1,
		Partial:    partial,
	}
	v.Truncated = int64(len(text)) < o.total
	return v
}

// finish closes the output: when it was truncated and has no spill file
// yet (cut by lines, not bytes), the spill file is written now. It returns
// the final view and the spill file's path, or an error saying why there
// is none.
func (o *bashOutput) finish() (bashView, string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v := o.viewLocked()
	if v.Truncated && o.spill == nil && o.spillErr == nil {
		// No spill yet means total <= BashMaxBytes: the tail is complete.
		o.openSpill()
	}
	if o.spill != nil {
		if err := o.spill.Close(); err != nil && o.spillErr == nil {
			o.spillErr = err
		}
		o.spill = nil
	}
	if !v.Truncated {
		return v, "", nil
	}
	if o.spillErr != nil {
		return v, "", o.spillErr
	}
	return v, o.spillPath, nil
}

// bashTail returns the end of b within maxLines lines and maxBytes bytes,
// the number of lines it holds, and whether its first line is only the end
// of a line longer than maxBytes. It never splits a UTF-8 sequence.
func bashTail(b []byte, maxLines, maxBytes int) (string, int, bool) {
	if len(b) == 0 {
		return "", 0, false
	}
	// A trailing newline ends the last line; it does not start another.
	body := b
	if body[len(body)-1] == '\n' {
		body = body[:len(body)-1]
	}
	pos, lines := len(body), 0 // b[pos:] is kept
	for lines < maxLines {
		lineEnd := pos
		if lines > 0 {
			lineEnd = pos - 1 // the newline before pos
		}
		i := bytes.LastIndexByte(body[:lineEnd], '\n')
		if len(b)-(i+1) > maxBytes {
			break
		}
		pos = i + 1
		lines++
		if i < 0 {
			break
		}
	}
	start := pos
	partial := false
	if lines == 0 {
		// The last line alone is over the limit: keep its end.
		start = len(b) - maxBytes
		for start < len(b) && !utf8.RuneStart(b[start]) {
			start++
		}
		lines, partial = 1, true
	}
	return string(b[start:]), lines, partial
}

// notice renders the closing notice for the model, with a notice when the output was
// cut.
func (v bashView) notice(spillPath string, spillErr error) string {
	if !v.Truncated {
		return ""
	}
	var where string
	switch {
	case spillPath != "":
		where = "Full output: " + spillPath
	case spillErr != nil:
		where = "the full output could not be saved: " + spillErr.Error()
	default:
		where = "the full output was not saved"
	}
	if v.Partial {
		return fmt.Sprintf("[Output cut: showing the last %s of line %d (the line is longer than that). %s]",
			bashFormatSize(len(v.Text)), v.LastLine, where)
	}
	return fmt.Sprintf("[Output cut: showing lines %d-%d of %d. %s]", v.FirstLine, v.LastLine, v.TotalLines, where)
}

func bashFormatSize(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1024)
}
