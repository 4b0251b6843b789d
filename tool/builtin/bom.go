package builtin

import (
	"bytes"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
)

var utf8BOM = []byte("\ufeff")

// utf16WithBOM returns, for a text that starts with a UTF-16 byte-order
// mark, a decoder to UTF-8 that drops the mark and an encoder back that
// writes it; nil, nil for any other text.
func utf16WithBOM(head []byte) (*encoding.Decoder, *encoding.Encoder) {
	var e encoding.Encoding
	var order unicode.Endianness
	switch {
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
		order = unicode.LittleEndian
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		order = unicode.BigEndian
	default:
		return nil, nil
	}
	e = unicode.UTF16(order, unicode.ExpectBOM)
	return e.NewDecoder(), unicode.UTF16(order, unicode.UseBOM).NewEncoder()
}
