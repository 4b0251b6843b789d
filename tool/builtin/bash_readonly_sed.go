package builtin

import "strings"

// sedScriptReadOnly reports whether a GNU sed script only reads its input
// and prints: it is parsed command by command, and e (execute), r and R
// (read a file in), w and W (write a file), and the s flags e and w are
// refused. Anything the parser does not follow exactly is refused too,
// including a regular expression whose end depends on whether a bracket
// expression may hold the delimiter.
func sedScriptReadOnly(script string) bool {
	p := sedParser{s: script}
	return p.script()
}

type sedParser struct {
	s     string
	i     int
	depth int
}

func (p *sedParser) eof() bool  { return p.i >= len(p.s) }
func (p *sedParser) peek() byte { return p.s[p.i] }

func (p *sedParser) skipSpace() {
	for !p.eof() && (p.peek() == ' ' || p.peek() == '\t') {
		p.i++
	}
}

func (p *sedParser) script() bool {
	for {
		for !p.eof() && strings.IndexByte(" \t\n;", p.peek()) >= 0 {
			p.i++
		}
		if p.eof() {
			return p.depth == 0
		}
		if !p.command() {
			return false
		}
	}
}

// command parses one command with its addresses.
func (p *sedParser) command() bool {
	if p.peek() == '#' {
		p.toLineEnd()
		return true
	}
	if !p.address() {
		return false
	}
	p.skipSpace()
	if !p.eof() && p.peek() == ',' {
		p.i++
		p.skipSpace()
		if !p.eof() && (p.peek() == '+' || p.peek() == '~') {
			p.i++
		}
		if !p.address() {
			return false
		}
	}
	p.skipSpace()
	for !p.eof() && p.peek() == '!' {
		p.i++
		p.skipSpace()
	}
	if p.eof() {
		return false // an address without a command
	}
	c := p.peek()
	p.i++
	switch c {
	case '{':
		p.depth++
		return true
	case '}':
		if p.depth == 0 {
			return false
		}
		p.depth--
		return p.end()
	case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		return p.end()
	case 'l', 'L', 'q', 'Q':
		p.skipSpace()
		for !p.eof() && p.peek() >= '0' && p.peek() <= '9' {
			p.i++
		}
		return p.end()
	case ':', 'b', 't', 'T', 'v':
		// Where a label (or a version) ends differs between sed versions
		// (at a semicolon, at a space): only plain labels are followed,
		// and they must end the command either way.
		p.skipSpace()
		for !p.eof() && sedLabelChar(p.peek()) {
			p.i++
		}
		return p.end()
	case 'a', 'i', 'c':
		// The text runs to the end of the line; a line ending in a
		// backslash continues it.
		for !p.eof() {
			if p.peek() == '\\' {
				p.i += 2
				continue
			}
			if p.peek() == '\n' {
				break
			}
			p.i++
		}
		return true
	case 's':
		return p.substitute()
	case 'y':
		d, ok := p.delimiter()
		if !ok {
			return false
		}
		for range 2 {
			if !p.delimited(d, false) {
				return false
			}
		}
		return p.end()
	}
	return false // e, r, R, w, W, and anything unknown
}

// end accepts what may follow a complete command: spaces, then a
// newline, ;, }, # or the end of the script.
func (p *sedParser) end() bool {
	p.skipSpace()
	if p.eof() {
		return true
	}
	switch p.peek() {
	case '\n', ';':
		p.i++
		return true
	case '}', '#':
		return true
	}
	return false
}

func (p *sedParser) toLineEnd() {
	for !p.eof() && p.peek() != '\n' {
		p.i++
	}
}

// address parses an optional address: a number (or first~step), $, or a
// regular expression /re/ or \cREc with the flags I and M.
func (p *sedParser) address() bool {
	if p.eof() {
		return true
	}
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		for !p.eof() && (p.peek() >= '0' && p.peek() <= '9' || p.peek() == '~') {
			p.i++
		}
	case c == '$':
		p.i++
	case c == '/' || c == '\\':
		d := byte('/')
		if c == '\\' {
			p.i++
			if p.eof() || p.peek() == '\n' || p.peek() == '\\' {
				return false
			}
			d = p.peek()
		}
		p.i++
		if !p.regex(d) {
			return false
		}
		for !p.eof() && (p.peek() == 'I' || p.peek() == 'M') {
			p.i++
		}
	}
	return true
}

// regex scans a regular expression up to its closing delimiter d. The
// end must be the same whether or not a bracket expression can hide the
// delimiter (GNU sed says it can), so that the parse cannot disagree with
// sed's.
func (p *sedParser) regex(d byte) bool {
	start := p.i
	if !p.delimited(d, true) {
		return false
	}
	withBrackets := p.i
	p.i = start
	if !p.delimited(d, false) || p.i != withBrackets {
		return false
	}
	return true
}

// delimited advances past text ending in an unescaped d, and past d.
func (p *sedParser) delimited(d byte, brackets bool) bool {
	for !p.eof() {
		c := p.peek()
		switch {
		case c == '\\':
			p.i += 2
			continue
		case c == d:
			p.i++
			return true
		case c == '\n' && d != '\n':
			return false
		case c == '[' && brackets:
			p.i++
			if !p.eof() && p.peek() == '^' {
				p.i++
			}
			if !p.eof() && p.peek() == ']' {
				p.i++
			}
			for !p.eof() && p.peek() != ']' {
				if p.peek() == '[' && p.i+1 < len(p.s) && strings.IndexByte(":=.", p.s[p.i+1]) >= 0 {
					k := strings.Index(p.s[p.i+2:], string(p.s[p.i+1])+"]")
					if k < 0 {
						return false
					}
					p.i += 2 + k + 2
					continue
				}
				if p.peek() == '\n' {
					return false
				}
				p.i++
			}
			if p.eof() {
				return false
			}
		}
		p.i++
	}
	return false
}

// delimiter reads the delimiter of an s or y command: any character but
// a backslash or a newline.
func (p *sedParser) delimiter() (byte, bool) {
	if p.eof() || p.peek() == '\\' || p.peek() == '\n' {
		return 0, false
	}
	p.i++
	return p.s[p.i-1], true
}

// substitute parses s/re/replacement/flags and refuses the e and w flags.
func (p *sedParser) substitute() bool {
	d, ok := p.delimiter()
	if !ok {
		return false
	}
	if !p.regex(d) || !p.delimited(d, false) {
		return false
	}
	for !p.eof() {
		switch c := p.peek(); {
		case c == 'g' || c == 'p' || c == 'i' || c == 'I' || c == 'm' || c == 'M' || c >= '0' && c <= '9':
			p.i++
		default:
			return p.end() // e, w and anything else fail here
		}
	}
	return true
}

func sedLabelChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}
