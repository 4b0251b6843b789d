package jsonpartial

// ObjectEnd watches streamed text, fragment by fragment, for the moment it
// holds one whole JSON object: optional whitespace, a '{', and the '}' that
// brings the nesting of brackets back to zero. It tracks only brackets and
// strings (with their escapes), so it costs one look at each byte however
// the text is split; whether the object is valid JSON is for Strict to say
// once Complete reports true. A complete object cannot be validly extended:
// any non-whitespace after it makes the text invalid, and ObjectEnd then
// stops reporting it complete.
//
// The zero value is ready to use.
type ObjectEnd struct {
	depth int
	state endState
	str   bool // inside a string
	esc   bool // the last byte was a backslash inside a string
}

type endState uint8

const (
	endBefore endState = iota // only whitespace so far
	endInside                 // inside the object
	endClosed                 // the closing brace was read; only whitespace since
	endNever                  // not an object, or something followed its end
)

// Feed reads the next fragment of the text and reports Complete.
func (o *ObjectEnd) Feed(frag string) bool {
	for i := 0; i < len(frag) && o.state != endNever; i++ {
		c := frag[i]
		switch o.state {
		case endBefore:
			switch {
			case isSpace(c):
			case c == '{':
				o.state, o.depth = endInside, 1
			default:
				o.state = endNever
			}
		case endClosed:
			if !isSpace(c) {
				o.state = endNever
			}
		case endInside:
			o.inside(c)
		}
	}
	return o.Complete()
}

func (o *ObjectEnd) inside(c byte) {
	if o.str {
		switch {
		case o.esc:
			o.esc = false
		case c == '\\':
			o.esc = true
		case c == '"':
			o.str = false
		}
		return
	}
	switch c {
	case '"':
		o.str = true
	case '{', '[':
		o.depth++
	case '}', ']':
		o.depth--
		switch {
		case o.depth == 0 && c == '}':
			o.state = endClosed
		case o.depth <= 0:
			o.state = endNever // a ']' closing the object: never valid
		}
	}
}

// Complete reports whether the text read so far is one object, closed,
// followed by nothing but whitespace.
func (o *ObjectEnd) Complete() bool { return o.state == endClosed }

// asciiSpace is the whitespace Strict trims around arguments and
// ObjectEnd allows around the object: JSON's four and the form feed and
// vertical tab that bytes.TrimSpace also drops. The two must agree, or a
// call Strict accepts would never be seen complete.
const asciiSpace = " \t\n\v\f\r"

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
