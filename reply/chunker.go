package reply

import "strings"

// Break is the kind of break a Chunker prefers.
type Break int

// The break preferences.
const (
	// BreakParagraph prefers a blank line, then a line end, then the end
	// of a sentence. The default.
	BreakParagraph Break = iota
	// BreakNewline prefers a line end and otherwise waits for the
	// maximum size before cutting at whitespace.
	BreakNewline
	// BreakSentence prefers the end of a sentence (., ! or ? before
	// whitespace).
	BreakSentence
)

// ChunkerOptions configure a Chunker. Sizes are in bytes; a block is never
// cut inside a UTF-8 sequence.
type ChunkerOptions struct {
	// MinChars is the smallest block worth sending (at least 1). Before the
	// end of the reply no block is shorter.
	MinChars int
	// MaxChars is the largest block (at least MinChars). A block that must
	// be cut inside a code fence gets a closing fence line, and the next
	// block reopens the fence with the original opening line; the limit
	// includes both.
	MaxChars int
	// Prefer is the preferred kind of break.
	Prefer Break
	// FlushOnParagraph sends a block at every blank line once it has
	// MinChars, instead of waiting for MaxChars.
	FlushOnParagraph bool
}

// Chunker cuts a growing reply into blocks for chat channels. Write adds
// text; Drain returns the blocks that are ready. It never splits inside a
// code fence without closing and reopening it, never drops a block because
// it equals the previous one, and never emits a block of only whitespace.
// A Chunker is not safe for concurrent use.
type Chunker struct {
	min, max int
	prefer   Break
	flushPar bool
	buf      strings.Builder
	// newline says a line break was written since the last drain; only
	// then can a paragraph flush find a new break.
	newline bool
}

// NewChunker returns a chunker with opts.
func NewChunker(opts ChunkerOptions) *Chunker {
	c := &Chunker{min: max(1, opts.MinChars), prefer: opts.Prefer, flushPar: opts.FlushOnParagraph}
	c.max = max(c.min, opts.MaxChars)
	return c
}

// Write appends text to the buffer.
func (c *Chunker) Write(text string) {
	c.buf.WriteString(text)
	if strings.IndexByte(text, '\n') >= 0 {
		c.newline = true
	}
}

// Buffered returns the text not yet emitted.
func (c *Chunker) Buffered() string { return c.buf.String() }

// Reset drops the buffer.
func (c *Chunker) Reset() {
	c.buf.Reset()
	c.newline = false
}

// Drain returns the blocks ready to send. Without force it emits only
// when the buffer has MaxChars (or, with FlushOnParagraph, a blank line
// after MinChars) and keeps the rest. With force (the end of the reply)
// it empties the buffer.
func (c *Chunker) Drain(force bool) []string {
	var out []string
	c.DrainFunc(force, func(b string) { out = append(out, b) })
	return out
}

// DrainFunc is Drain calling emit for each block instead of collecting
// them.
func (c *Chunker) DrainFunc(force bool, emit func(string)) {
	n := c.buf.Len()
	if n == 0 || (!force && n < c.min) || (!force && n < c.max && (!c.flushPar || !c.newline)) {
		return
	}
	c.newline = false
	buf := c.buf.String()
	if force && n <= c.max {
		if strings.TrimSpace(buf) != "" {
			emit(buf)
		}
		c.buf.Reset()
		return
	}
	spans := fenceSpans(buf)
	pos := 0
	reopen := "" // the fence to reopen at the start of the next block
	send := func(b string) {
		if strings.TrimSpace(b) != "" {
			emit(b)
		}
	}
	for pos < len(buf) {
		rem := buf[pos:]
		total := len(reopen) + len(rem)
		minAt := max(1, c.min-len(reopen))
		winEnd := max(c.max-len(reopen), c.max/2, 1)
		if force && total <= c.max {
			send(reopen + rem)
			reopen, pos = "", len(buf)
			break
		}
		if !force && total < c.min {
			break
		}
		if !force && c.flushPar {
			if p, skip, ok := c.paragraphFlush(buf, spans, pos, minAt, winEnd); ok {
				send(reopen + rem[:p])
				reopen, pos = "", pos+p+skip
				continue
			}
		}
		if !force && total < c.max {
			break
		}
		if p, ok := c.pick(buf, spans, pos, minAt, winEnd, force); ok {
			send(reopen + rem[:p])
			reopen = ""
			pos += p
			switch {
			case pos < len(buf) && (buf[pos] == ' ' || buf[pos] == '\t'):
				// A break inside a line drops the whole run of blanks, so
				// the next block does not start indented (four spaces
				// read as code).
				for pos < len(buf) && (buf[pos] == ' ' || buf[pos] == '\t') {
					pos++
				}
			case pos < len(buf) && isSpace(buf[pos]):
				pos++
			}
			for pos < len(buf) && buf[pos] == '\n' {
				pos++
			}
			continue
		}
		// No good break: cut as late as allowed, closing a fence if the
		// cut lands in one (past its opening line, which only an absurdly
		// long info string could make longer than a block).
		h := min(winEnd, len(rem))
		if s := spanAt(spans, pos+h); s != nil && pos+h > s.start+len(s.openLine) {
			closing := s.indent + s.marker
			h = max(1, min(h, winEnd-len(closing)-1))
			if nl := strings.LastIndexByte(rem[:h], '\n'); nl >= minAt && spanAt(spans, pos+nl) == s {
				h = nl + 1 // keep code lines whole when one fits
			}
			for h > 1 && rem[h-1] != '\n' && fenceLike(strings.TrimLeft(rem[h:], " \t"), force) {
				h-- // nor a code line cut where the rest would read as a marker line
			}
			if pos+h <= s.start+len(s.openLine) && s.start > pos {
				// Room for the closing line pushed the cut back into the
				// opening line: end the block before the fence instead.
				send(reopen + rem[:s.start-pos])
				reopen = ""
				pos = s.start
				continue
			}
			h = runeStart(buf, pos, h)
			blk := reopen + rem[:h]
			if !strings.HasSuffix(blk, "\n") {
				blk += "\n"
			}
			send(blk + closing)
			reopen = reopenLine(s, c.max)
			pos += h
			continue
		}
		// Nor inside or right after a fence's opening line, which would
		// leave its code unfenced; while streaming, the unfinished last
		// line may still become one. Cut before that line instead.
		if ls := fenceLineBefore(buf, spans, pos+h, force); ls > pos {
			h = ls - pos
		}
		if !force && h == len(rem) && h > 1 && rem[h-1] != '\n' {
			h-- // what comes next joins this line: keep a byte for it to join
		}
		for h > 1 && rem[h-1] != '\n' && h < len(rem) && fenceLike(strings.TrimLeft(rem[h:], " \t"), force) {
			h--
		}
		h = runeStart(buf, pos, h)
		send(reopen + rem[:h])
		reopen = ""
		pos += h
		for pos < len(buf) && buf[pos] == '\n' {
			pos++
		}
	}
	rest := ""
	if pos < len(buf) || !force {
		rest = reopen + buf[pos:]
	}
	c.buf.Reset()
	c.buf.WriteString(rest)
}

// fenceLineBefore returns the start of the line a cut at i would split
// or end, when that line opens a fence; without force it also counts the
// unfinished last line of buf when it could still grow into an opening
// line. It returns -1 otherwise.
func fenceLineBefore(buf string, spans []fenceSpan, i int, force bool) int {
	ls := strings.LastIndexByte(buf[:i], '\n') + 1
	if ls == i && i < len(buf) {
		return -1 // the cut is at a line start: nothing is split
	}
	for k := range spans {
		if spans[k].start == ls {
			return ls
		}
	}
	if !force && strings.IndexByte(buf[ls:], '\n') < 0 {
		t := strings.TrimLeft(buf[ls:], " ")
		if len(buf[ls:])-len(t) <= 3 && t != "" && (t[0] == '`' || t[0] == '~') {
			return ls
		}
	}
	return -1
}

// reopenLine is the line that reopens fence s in the next block: its
// opening line, or only its marker when the opening line would take more
// than a quarter of a block, or nothing when even that is too long.
func reopenLine(s *fenceSpan, maxChars int) string {
	for _, l := range []string{s.openLine, s.indent + s.marker} {
		if 2*(len(l)+1) <= maxChars/2 {
			return l + "\n"
		}
	}
	return ""
}

// runeStart moves a cut at pos+h back to the start of a UTF-8 sequence
// (but never to h == 0).
func runeStart(buf string, pos, h int) int {
	for h > 1 && pos+h < len(buf) && buf[pos+h]&0xC0 == 0x80 {
		h--
	}
	return h
}

// paragraphFlush finds the first safe blank line at or after minAt from
// pos whose block fits in winEnd. It returns the block length and how many
// bytes of line breaks follow it.
func (c *Chunker) paragraphFlush(buf string, spans []fenceSpan, pos, minAt, winEnd int) (p, skip int, ok bool) {
	rem := buf[pos:]
	for i := 0; i < len(rem) && i <= winEnd; {
		k := strings.IndexByte(rem[i:], '\n')
		if k < 0 {
			return 0, 0, false
		}
		i += k
		if n := blankLineLen(rem[i:]); n > 0 && i >= minAt && i <= winEnd && spanAt(spans, pos+i) == nil {
			return i, n, true
		}
		i++
	}
	return 0, 0, false
}

// blankLineLen returns the length of a paragraph break at the start of s
// (a newline, optional spaces or tabs, one or more newlines), or 0.
func blankLineLen(s string) int {
	if s == "" || s[0] != '\n' {
		return 0
	}
	i := 1
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i == len(s) || s[i] != '\n' {
		return 0
	}
	for i < len(s) && s[i] == '\n' {
		i++
	}
	return i
}

// pick finds the best break at an index in [minAt, winEnd] of buf[pos:]
// (the block is the text before it, so it has at most winEnd bytes), by
// preference: the last safe paragraph break, the last safe line end, the
// last sentence end, the last safe whitespace.
func (c *Chunker) pick(buf string, spans []fenceSpan, pos, minAt, winEnd int, force bool) (int, bool) {
	rem := buf[pos:]
	safe := func(i int) bool { return spanAt(spans, pos+i) == nil }
	last := func(ok func(i int) bool) (int, bool) {
		for i := min(winEnd, len(rem)-1); i >= minAt; i-- {
			if ok(i) && safe(i) {
				return i, true
			}
		}
		return 0, false
	}
	if c.prefer == BreakParagraph {
		if i, ok := last(func(i int) bool { return blankLineLen(rem[i:]) > 0 }); ok {
			return i, true
		}
	}
	if c.prefer != BreakSentence {
		if i, ok := last(func(i int) bool { return rem[i] == '\n' }); ok {
			return i, true
		}
	}
	if c.prefer != BreakNewline {
		if i, ok := last(func(i int) bool {
			return isSpace(rem[i]) && i > 0 && (rem[i-1] == '.' || rem[i-1] == '!' || rem[i-1] == '?') && !makesFence(rem, i, force)
		}); ok {
			return i, true
		}
	}
	if c.prefer == BreakSentence {
		if i, ok := last(func(i int) bool { return rem[i] == '\n' }); ok {
			return i, true
		}
	}
	return last(func(i int) bool { return isSpace(rem[i]) && !makesFence(rem, i, force) })
}

// makesFence reports whether a break at the space rem[i] in the middle of
// a line would start the next block (after the blanks the break drops)
// with backticks or tildes that a renderer then takes for a fence.
func makesFence(rem string, i int, final bool) bool {
	return rem[i] != '\n' && fenceLike(strings.TrimLeft(rem[i+1:], " \t"), final)
}

// fenceLike reports whether s starts like a fence line: up to three
// spaces, then three backticks or tildes. Unless final, s is the unfinished
// end of the stream when it holds no newline, and counts when it may still
// grow into one (nothing yet, or only backticks or only tildes).
func fenceLike(s string, final bool) bool {
	if _, marker, _ := splitFenceLine(s[:min(len(s), 3+3)]); marker != "" {
		return true
	}
	if final || strings.IndexByte(s, '\n') >= 0 {
		return false
	}
	t := strings.TrimLeft(s, " ")
	return strings.Trim(t, "`") == "" || strings.Trim(t, "~") == ""
}
