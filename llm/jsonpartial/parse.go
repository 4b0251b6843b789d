package jsonpartial

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

var emptyObject = json.RawMessage("{}")

// Parse returns the JSON value a possibly incomplete JSON text stands for
// so far. Complete JSON is returned as is (compacted only of trailing
// whitespace); empty input and input that cannot be the start of a JSON
// document give {}. The result is always valid JSON and never aliases s.
func Parse(s []byte) json.RawMessage {
	s = bytes.TrimSpace(s)
	if len(s) == 0 {
		return emptyObject
	}
	// One pass: the parser checks the syntax as it copies, so its output
	// needs no second validation (the fuzz target holds it to that).
	p := parser{in: s, out: make([]byte, 0, len(s)+8)}
	switch p.value(0) {
	case bad, empty:
		return emptyObject
	case complete:
		if p.ws(); p.eof() {
			return bytes.Clone(s) // complete JSON, as it was written
		}
	}
	return p.out
}

// Strict parses the final arguments of a tool call: empty text is {}, and
// anything else must be exactly one JSON object.
func Strict(s []byte) (json.RawMessage, error) {
	s = bytes.Trim(s, asciiSpace)
	if len(s) == 0 {
		return emptyObject, nil
	}
	if !json.Valid(s) {
		var v any
		err := json.Unmarshal(s, &v)
		return nil, fmt.Errorf("tool arguments are not valid JSON: %w", err)
	}
	if s[0] != '{' {
		return nil, errors.New("tool arguments are JSON but not an object")
	}
	return bytes.Clone(s), nil
}

// Invalid returns the arguments of a call whose text did not parse: the
// raw text as a JSON string (see the package doc).
func Invalid(raw []byte) json.RawMessage {
	// A string always encodes; markup stays literal, as in every line
	// agentloop writes (llm.MarshalJSON, which this package sits below).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(raw))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// IsInvalid reports whether args were made by Invalid (or are otherwise a
// JSON string rather than an object).
func IsInvalid(args json.RawMessage) bool {
	args = bytes.TrimSpace(args)
	return len(args) > 0 && args[0] == '"'
}

type status int

const (
	complete status = iota // the value was read in full
	partial                // the input ended inside it; it was closed
	empty                  // the input ended before anything usable
	bad                    // not JSON
)

const maxDepth = 512

type parser struct {
	in  []byte
	i   int
	out []byte
}

func (p *parser) ws() {
	for p.i < len(p.in) {
		switch p.in[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) eof() bool { return p.i >= len(p.in) }

func (p *parser) value(depth int) status {
	if depth > maxDepth {
		return bad
	}
	p.ws()
	if p.eof() {
		return empty
	}
	switch c := p.in[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return bad
}

func (p *parser) object(depth int) status {
	p.i++
	p.out = append(p.out, '{')
	first := true
	for {
		p.ws()
		if p.eof() {
			p.out = append(p.out, '}')
			return partial
		}
		if p.in[p.i] == '}' {
			p.i++
			p.out = append(p.out, '}')
			return complete
		}
		mark := len(p.out)
		cut := func() status {
			p.out = append(p.out[:mark], '}')
			return partial
		}
		if !first {
			if p.in[p.i] != ',' {
				return bad
			}
			p.i++
			p.ws()
			if p.eof() {
				return cut()
			}
			p.out = append(p.out, ',')
		}
		if p.in[p.i] != '"' {
			return bad
		}
		switch p.str() {
		case bad:
			return bad
		case partial, empty:
			return cut()
		}
		p.ws()
		if p.eof() {
			return cut()
		}
		if p.in[p.i] != ':' {
			return bad
		}
		p.i++
		p.out = append(p.out, ':')
		switch p.value(depth + 1) {
		case bad:
			return bad
		case empty:
			return cut()
		case partial:
			p.out = append(p.out, '}')
			return partial
		}
		first = false
	}
}

func (p *parser) array(depth int) status {
	p.i++
	p.out = append(p.out, '[')
	first := true
	for {
		p.ws()
		if p.eof() {
			p.out = append(p.out, ']')
			return partial
		}
		if p.in[p.i] == ']' {
			p.i++
			p.out = append(p.out, ']')
			return complete
		}
		mark := len(p.out)
		if !first {
			if p.in[p.i] != ',' {
				return bad
			}
			p.i++
			p.ws()
			if p.eof() {
				p.out = append(p.out[:mark], ']')
				return partial
			}
			p.out = append(p.out, ',')
		}
		switch p.value(depth + 1) {
		case bad:
			return bad
		case empty:
			p.out = append(p.out[:mark], ']')
			return partial
		case partial:
			p.out = append(p.out, ']')
			return partial
		}
		first = false
	}
}

// str copies a string. Cut short, it drops an incomplete escape or UTF-8
// sequence at the end and closes the string.
func (p *parser) str() status {
	p.out = append(p.out, '"')
	p.i++
	start := p.i
	for p.i < len(p.in) {
		c := p.in[p.i]
		switch {
		case c == '"':
			p.out = append(p.out, p.in[start:p.i+1]...)
			p.i++
			return complete
		case c == '\\':
			if p.i+1 >= len(p.in) {
				p.out = append(p.out, p.in[start:p.i]...)
				p.i = len(p.in)
				return p.closeString()
			}
			e := p.in[p.i+1]
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.in) {
					p.out = append(p.out, p.in[start:p.i]...)
					p.i = len(p.in)
					return p.closeString()
				}
				for _, h := range p.in[p.i+2 : p.i+6] {
					if !isHex(h) {
						return bad
					}
				}
				p.i += 6
			default:
				return bad
			}
		case c < 0x20:
			return bad
		default:
			p.i++
		}
	}
	p.out = append(p.out, p.in[start:]...)
	return p.closeString()
}

func (p *parser) closeString() status {
	// Drop a UTF-8 sequence cut in the middle.
	for n := 1; n <= 3 && n <= len(p.out); n++ {
		b := p.out[len(p.out)-n]
		if b < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(b) {
			if !utf8.FullRune(p.out[len(p.out)-n:]) {
				p.out = p.out[:len(p.out)-n]
			}
			break
		}
	}
	p.out = append(p.out, '"')
	return partial
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (p *parser) number() status {
	start := p.i
	for p.i < len(p.in) {
		c := p.in[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	num := p.in[start:p.i]
	if !p.eof() {
		if !json.Valid(num) {
			return bad
		}
		p.out = append(p.out, num...)
		return complete
	}
	// Cut short: a leading zero followed by a digit can never become a
	// number; otherwise trim what cannot end one ("1.", "1e", "-").
	if d := bytes.TrimPrefix(num, []byte("-")); len(d) > 1 && d[0] == '0' && d[1] >= '0' && d[1] <= '9' {
		return bad
	}
	for len(num) > 0 && !json.Valid(num) {
		num = num[:len(num)-1]
	}
	if len(num) == 0 {
		return empty
	}
	p.out = append(p.out, num...)
	return partial
}

func (p *parser) literal(word string) status {
	n := 0
	for n < len(word) && p.i+n < len(p.in) && p.in[p.i+n] == word[n] {
		n++
	}
	if n == len(word) {
		p.i += n
		p.out = append(p.out, word...)
		return complete
	}
	if p.i+n < len(p.in) {
		return bad
	}
	// A prefix of the literal at the end of the input: complete it.
	p.i += n
	p.out = append(p.out, word...)
	return partial
}
