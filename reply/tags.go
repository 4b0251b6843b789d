package reply

import (
	"bytes"
	"strings"
)

// TagOptions configure a Stripper.
type TagOptions struct {
	// EnforceFinal delivers only text inside <final>...</final>: text
	// before the first <final>, between blocks and after the last
	// </final> is dropped, and a reply without <final> comes out empty (so
	// reasoning a model leaked without tags never reaches people).
	EnforceFinal bool
	// KeepUnclosed keeps, at Flush, the text of a thinking block that was
	// never closed (without its tag). By default it is dropped: a model
	// cut off mid-thought has not said anything yet.
	KeepUnclosed bool
}

// Stripper removes reasoning from streamed reply text: the tags <think>,
// <thinking>, <thought> and <antthinking> (also with an antml: prefix)
// together with their content, and the tags <final> and </final> (keeping
// their content). Tag names are case-insensitive and may carry whitespace
// ("< think >") and name="value" attributes.
//
// Tags inside code are text: inside fenced blocks (``` or ~~~, closed by a
// line with at least as many of the same marker) and inside inline code
// spans (a backtick run closed by a run of the same length on the same
// line). Code is not tracked inside a thinking block, whose content is
// dropped anyway, so a stray backtick in reasoning cannot hide its closing
// tag. Nesting is not counted: the first closing tag ends a block.
//
// Text may be split anywhere between Write calls, even inside a tag or a
// backtick run: a Stripper holds back only what it cannot decide yet, so
// the concatenated output of any split equals that of one Write of the
// whole text. Flush ends the reply. A Stripper is not safe for concurrent
// use.
type Stripper struct {
	opts TagOptions
	buf  []byte // input not decided yet
	out  []byte
	held []byte // content of an open thinking block, for KeepUnclosed

	thinking  bool
	final     bool // inside <final>
	midLine   bool // buf[0] is not at the start of a line
	fenceOn   bool
	fenceChar byte
	fenceLen  int
	// scan is where the search for the end of the inline code span that
	// starts buf resumes, so a long span fed byte by byte is scanned once.
	scan int
	// run, when not 0, is how far the marker run of the construct held at
	// the start of buf is known to reach, so a long run of backticks fed
	// byte by byte is counted once.
	run int
}

// NewStripper returns a stripper; nil options mean the defaults.
func NewStripper(opts *TagOptions) *Stripper {
	s := &Stripper{}
	if opts != nil {
		s.opts = *opts
	}
	return s
}

// Reset forgets all state, for the next reply.
func (s *Stripper) Reset() {
	*s = Stripper{opts: s.opts, buf: s.buf[:0], out: s.out[:0], held: s.held[:0]}
}

// Write feeds the next piece of the reply and returns the text that is
// decided to be visible.
func (s *Stripper) Write(chunk string) string {
	if s.plain() && strings.IndexAny(chunk, "<`\n") < 0 && (s.midLine || !startsLikeFence(chunk)) {
		if chunk != "" {
			s.midLine = true
		}
		return chunk
	}
	s.buf = append(s.buf, chunk...)
	s.out = s.out[:0]
	s.process(false)
	return string(s.out)
}

// Flush ends the reply: everything held back is decided (an unfinished
// tag is text; an unclosed thinking block is dropped unless KeepUnclosed)
// and the stripper is reset for the next reply.
func (s *Stripper) Flush() string {
	s.out = s.out[:0]
	s.process(true)
	if s.thinking && s.opts.KeepUnclosed {
		s.thinking = false
		s.emit(s.held)
	}
	out := string(s.out)
	s.Reset()
	return out
}

// plain reports whether text passes through unchanged for now.
func (s *Stripper) plain() bool {
	return len(s.buf) == 0 && !s.fenceOn && !s.thinking && (!s.opts.EnforceFinal || s.final)
}

func startsLikeFence(chunk string) bool {
	return chunk != "" && (chunk[0] == ' ' || chunk[0] == '`' || chunk[0] == '~')
}

// emit passes decided text on, or drops it inside thinking (or outside
// <final> with EnforceFinal).
func (s *Stripper) emit(b []byte) {
	switch {
	case s.thinking:
		if s.opts.KeepUnclosed {
			s.held = append(s.held, b...)
		}
	case s.opts.EnforceFinal && !s.final:
	default:
		s.out = append(s.out, b...)
	}
}

// decision is the answer of a matcher that may need more input.
type decision int

const (
	no decision = iota
	yes
	more
)

// process consumes as much of buf as can be decided; eof means no more
// input will come.
func (s *Stripper) process(eof bool) {
	b := s.buf
	i := 0
loop:
	for i < len(b) {
		if s.fenceOn {
			if !s.midLine {
				n, d := s.fenceClose(b[i:], eof)
				if d == more {
					break
				}
				if d == yes {
					s.emit(b[i : i+n])
					i += n
					s.fenceOn = false
					s.midLine = b[i-1] != '\n'
					continue
				}
			}
			k := bytes.IndexByte(b[i:], '\n')
			if k < 0 {
				s.emit(b[i:])
				i = len(b)
				s.midLine = true
				break
			}
			s.emit(b[i : i+k+1])
			i += k + 1
			s.midLine = false
			continue
		}
		if !s.midLine && !s.thinking {
			n, c, run, d := s.fenceOpen(b[i:], eof)
			if d == more {
				break
			}
			if d == yes {
				s.fenceOn, s.fenceChar, s.fenceLen = true, c, run
				s.emit(b[i : i+n])
				i += n
				s.midLine = true
				continue
			}
		}
		specials := "<`\n"
		if s.thinking {
			specials = "<\n"
		}
		k := bytes.IndexAny(b[i:], specials)
		if k < 0 {
			s.emit(b[i:])
			i = len(b)
			s.midLine = true
			break
		}
		if k > 0 {
			s.emit(b[i : i+k])
			i += k
			s.midLine = true
		}
		switch b[i] {
		case '\n':
			s.emit(b[i : i+1])
			i++
			s.midLine = false
		case '<':
			n, t, d := parseTag(b[i:], eof)
			switch d {
			case more:
				break loop
			case no:
				s.emit(b[i : i+1])
				i++
			case yes:
				s.apply(t)
				i += n
			}
			s.midLine = true
		case '`':
			n, d := s.codeSpan(b[i:], eof)
			if d == more {
				break loop
			}
			s.emit(b[i : i+n]) // the whole span, or only the backticks when it is not one
			i += n
			s.midLine = true
		}
	}
	if i > 0 {
		// scan is already relative to the held text, which starts at i.
		s.buf = append(s.buf[:0], b[i:]...)
	}
}

// countRun returns the length of the run of c starting at b[from],
// resuming after the part already counted when the construct was held.
func (s *Stripper) countRun(b []byte, from int, c byte) int {
	i := from
	if s.run > from {
		i = s.run
	}
	for i < len(b) && b[i] == c {
		i++
	}
	return i - from
}

// codeSpan decides the backtick run at the start of b: it returns the
// length of the whole inline code span when a run of the same length
// closes it on the same line, else (yes) the length of the run alone,
// which is then plain text.
func (s *Stripper) codeSpan(b []byte, eof bool) (int, decision) {
	r := s.countRun(b, 0, '`')
	if r == len(b) && !eof {
		s.run = r
		return 0, more
	}
	s.run = 0
	j := max(r, s.scan)
	for j < len(b) {
		k := bytes.IndexAny(b[j:], "`\n")
		if k < 0 {
			break
		}
		j += k
		if b[j] == '\n' {
			s.scan = 0
			return r, yes // no closer on this line: literal backticks
		}
		m := 0
		for j+m < len(b) && b[j+m] == '`' {
			m++
		}
		if j+m == len(b) && !eof {
			s.scan = j // the run may grow
			return 0, more
		}
		if m == r {
			s.scan = 0
			return j + m, yes
		}
		j += m
	}
	if eof {
		s.scan = 0
		return r, yes
	}
	s.scan = len(b)
	return 0, more
}

// fenceOpen matches an opening fence line at the start of b: up to three
// spaces, then three or more backticks or tildes. It returns the length of
// the indent and marker run.
func (s *Stripper) fenceOpen(b []byte, eof bool) (n int, c byte, run int, d decision) {
	sp := 0
	for sp < len(b) && b[sp] == ' ' {
		sp++
	}
	if sp > 3 {
		return 0, 0, 0, no
	}
	if sp == len(b) {
		return 0, 0, 0, moreUnless(eof)
	}
	c = b[sp]
	if c != '`' && c != '~' {
		return 0, 0, 0, no
	}
	run = s.countRun(b, sp, c)
	if sp+run == len(b) && !eof {
		s.run = sp + run
		return 0, 0, 0, more
	}
	s.run = 0
	if run < 3 {
		return 0, 0, 0, no
	}
	return sp + run, c, run, yes
}

// fenceClose matches a closing fence line at the start of b: up to three
// spaces, a run of the fence's marker at least as long as the opening
// one, then only spaces or tabs. It returns the line's length with its
// newline.
func (s *Stripper) fenceClose(b []byte, eof bool) (int, decision) {
	sp := 0
	for sp < len(b) && b[sp] == ' ' {
		sp++
	}
	if sp > 3 {
		return 0, no
	}
	run := 0
	if sp < len(b) && b[sp] == s.fenceChar {
		run = s.countRun(b, sp, s.fenceChar)
	}
	j := sp + run
	if j == len(b) {
		if eof && run >= s.fenceLen {
			s.run = 0
			return j, yes
		}
		if !eof && run > 0 {
			s.run = j
		}
		return 0, moreUnless(eof)
	}
	s.run = 0
	if run < s.fenceLen {
		return 0, no
	}
	for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r') {
		j++
	}
	if j == len(b) {
		if eof {
			return j, yes
		}
		return 0, more
	}
	if b[j] == '\n' {
		return j + 1, yes
	}
	return 0, no
}

func moreUnless(eof bool) decision {
	if eof {
		return no
	}
	return more
}

type tagKind int

const (
	tagThinkOpen tagKind = iota
	tagThinkClose
	tagFinalOpen
	tagFinalClose
	tagSelfClosing
)

func (s *Stripper) apply(t tagKind) {
	switch t {
	case tagThinkOpen:
		s.thinking = true
	case tagThinkClose:
		if s.thinking {
			s.thinking = false
			s.held = s.held[:0]
		}
	case tagFinalOpen:
		s.final = true
	case tagFinalClose:
		s.final = false
	}
}

// maxTagLen bounds how far a possible tag is held back.
const maxTagLen = 256

// parseTag matches a reasoning or final tag at the start of b (b[0] is
// '<'): optional whitespace, an optional '/', the name with an optional
// antml: prefix, then '>' or whitespace and name=value attributes, an
// optional '/' and '>'.
func parseTag(b []byte, eof bool) (int, tagKind, decision) {
	if len(b) > maxTagLen {
		b = b[:maxTagLen]
		eof = true // a tag this long is no tag
	}
	p := skipWS(b, 1)
	if p == len(b) {
		return 0, 0, moreUnless(eof)
	}
	closing := false
	if b[p] == '/' {
		closing = true
		p = skipWS(b, p+1)
		if p == len(b) {
			return 0, 0, moreUnless(eof)
		}
	}
	start := p
	for p < len(b) && (isLetter(b[p]) || b[p] == ':') && p-start < 20 {
		p++
	}
	if p == len(b) {
		return 0, 0, moreUnless(eof)
	}
	name := strings.ToLower(string(b[start:p]))
	name = strings.TrimPrefix(name, "antml:")
	var final bool
	switch name {
	case "think", "thinking", "thought", "antthinking":
	case "final":
		final = true
	default:
		return 0, 0, no
	}
	afterName := p
	p = skipWS(b, p)
	// Attributes: only after whitespace, each name=value.
	for p > afterName && p < len(b) && b[p] != '>' && b[p] != '/' {
		q, d := parseAttr(b, p)
		if d != yes {
			if d == more {
				return 0, 0, moreUnless(eof)
			}
			return 0, 0, no
		}
		p = skipWS(b, q)
		if p == q && p < len(b) && b[p] != '>' && b[p] != '/' {
			return 0, 0, no // attributes need whitespace between them
		}
	}
	if p == len(b) {
		return 0, 0, moreUnless(eof)
	}
	self := false
	if b[p] == '/' {
		self = true
		p++
		if p == len(b) {
			return 0, 0, moreUnless(eof)
		}
	}
	if b[p] != '>' {
		return 0, 0, no
	}
	p++
	switch {
	case self && !closing:
		return p, tagSelfClosing, yes
	case final && closing:
		return p, tagFinalClose, yes
	case final:
		return p, tagFinalOpen, yes
	case closing:
		return p, tagThinkClose, yes
	}
	return p, tagThinkOpen, yes
}

func parseAttr(b []byte, p int) (int, decision) {
	start := p
	for p < len(b) && (isLetter(b[p]) || b[p] == '_' || b[p] == ':' || (p > start && (b[p] == '-' || b[p] == '.' || isDigit(b[p])))) {
		p++
	}
	if p == len(b) {
		return 0, more
	}
	if p == start {
		return 0, no
	}
	p = skipWS(b, p)
	if p == len(b) {
		return 0, more
	}
	if b[p] != '=' {
		return 0, no
	}
	p = skipWS(b, p+1)
	if p == len(b) {
		return 0, more
	}
	if q := b[p]; q == '"' || q == '\'' {
		k := bytes.IndexByte(b[p+1:], q)
		if k < 0 {
			return 0, more
		}
		return p + 1 + k + 1, yes
	}
	v := p
	for p < len(b) && !isSpace(b[p]) && strings.IndexByte("\"'<>=`", b[p]) < 0 {
		p++
	}
	if p == len(b) {
		return 0, more
	}
	if p == v {
		return 0, no
	}
	return p, yes
}

func skipWS(b []byte, p int) int {
	for p < len(b) && isSpace(b[p]) {
		p++
	}
	return p
}

func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// Mode says what StripTags does with a thinking block that is never
// closed.
type Mode int

// The modes.
const (
	// Strict drops everything after an unclosed opening tag.
	Strict Mode = iota
	// Preserve keeps the text after an unclosed opening tag (without the
	// tag).
	Preserve
)

// Trim says which ends of the result StripTags trims of whitespace.
type Trim int

// The trims.
const (
	TrimBoth Trim = iota
	TrimStart
	TrimNone
)

// StripOptions configure StripTags; the zero value is Strict, TrimBoth.
type StripOptions struct {
	Mode Mode
	Trim Trim
	// EnforceFinal is TagOptions.EnforceFinal.
	EnforceFinal bool
}

// StripTags removes reasoning tags from a whole text, as a Stripper does
// for a stream (see Stripper for the rules), then trims the result.
func StripTags(text string, opts *StripOptions) string {
	var o StripOptions
	if opts != nil {
		o = *opts
	}
	s := NewStripper(&TagOptions{EnforceFinal: o.EnforceFinal, KeepUnclosed: o.Mode == Preserve})
	out := s.Write(text) + s.Flush()
	switch o.Trim {
	case TrimBoth:
		return strings.TrimSpace(out)
	case TrimStart:
		return strings.TrimLeft(out, " \t\r\n")
	}
	return out
}
