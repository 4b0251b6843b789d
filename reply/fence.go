package reply

import (
	"math"
	"sort"
	"strings"
)

// fenceSpan is one fenced code block of a text: [start, end) runs from the
// first byte of the opening line to the end of the closing line (before
// its newline); a fence never closed has end math.MaxInt.
type fenceSpan struct {
	start, end int
	openLine   string // the whole opening line, e.g. "```go"
	indent     string // the spaces before the marker
	marker     string // the marker run, e.g. "```" or "~~~~"
}

// fenceSpans finds the fenced code blocks of text. An opening line is up
// to three spaces and three or more backticks or tildes, then anything; a
// closing line is up to three spaces and at least as many of the same
// marker, then only spaces or tabs.
func fenceSpans(text string) []fenceSpan {
	var spans []fenceSpan
	var open *fenceSpan
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		line := text[pos:end]
		indent, marker, rest := splitFenceLine(line)
		switch {
		case open == nil && marker != "":
			open = &fenceSpan{start: pos, openLine: line, indent: indent, marker: marker}
		case open != nil && marker != "" && marker[0] == open.marker[0] && len(marker) >= len(open.marker) &&
			strings.Trim(rest, " \t\r") == "":
			open.end = end
			spans = append(spans, *open)
			open = nil
		}
		pos = end + 1
	}
	if open != nil {
		// An unclosed fence runs on into text not written yet: even the
		// end of the buffer is inside it.
		open.end = math.MaxInt
		spans = append(spans, *open)
	}
	return spans
}

// fenceTracker follows fences line by line.
type fenceTracker struct {
	char byte
	n    int // the open fence's marker length; 0 outside a fence
}

// line takes the next line and reports whether it is code: inside a
// fence, or one of its marker lines.
func (f *fenceTracker) line(l string) bool {
	_, marker, rest := splitFenceLine(l)
	switch {
	case f.n == 0 && marker != "":
		f.char, f.n = marker[0], len(marker)
		return true
	case f.n > 0 && marker != "" && marker[0] == f.char && len(marker) >= f.n && strings.Trim(rest, " \t\r") == "":
		f.n = 0
		return true
	}
	return f.n > 0
}

// splitFenceLine splits a line that could open or close a fence into its
// indent, marker run and the rest; marker is empty when it cannot.
func splitFenceLine(line string) (indent, marker, rest string) {
	sp := 0
	for sp < len(line) && sp < 4 && line[sp] == ' ' {
		sp++
	}
	if sp > 3 || sp == len(line) || (line[sp] != '`' && line[sp] != '~') {
		return "", "", ""
	}
	c := line[sp]
	n := sp
	for n < len(line) && line[n] == c {
		n++
	}
	if n-sp < 3 {
		return "", "", ""
	}
	return line[:sp], line[sp:n], line[n:]
}

// spanAt returns the span that index i is strictly inside (start < i <
// end), or nil: both ends of a span are safe places to break.
func spanAt(spans []fenceSpan, i int) *fenceSpan {
	// The last span starting before i is the only candidate.
	k := sort.Search(len(spans), func(k int) bool { return spans[k].start >= i }) - 1
	if k >= 0 && i < spans[k].end {
		return &spans[k]
	}
	return nil
}
