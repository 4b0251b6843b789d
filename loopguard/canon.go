package loopguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CanonicalJSON re-encodes the JSON value data the way a JavaScript
// runtime's stable stringify does: object keys sorted recursively (by UTF-16
// code units, as Array.prototype.sort compares), no whitespace, numbers
// parsed as float64 and printed as Number.prototype.toString prints them,
// strings escaped exactly as JSON.stringify escapes them (so '<', '>', '&'
// and U+2028/U+2029 are written literally, unlike encoding/json). When a
// key repeats, the last value wins, as in JSON.parse. Empty input encodes
// as null.
//
// Identical arguments written differently by a model ("1.0" and "1",
// reordered keys, extra spaces) therefore get one identity, and the
// identity matches the one OpenClaw computes for the same arguments. One
// known difference remains: a lone UTF-16 surrogate escape ("\ud800") is
// decoded to U+FFFD here, where JavaScript keeps and re-escapes it.
func CanonicalJSON(data []byte) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical JSON: the arguments are not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("canonical JSON: unexpected data after the first JSON value")
	}
	return appendCanonical(nil, v), nil
}

// appendCanonical appends the canonical encoding of v, a value decoded with
// UseNumber (nil, bool, json.Number, string, []any, map[string]any), or a
// float64/int built by this package.
func appendCanonical(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		if x {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !math.IsInf(f, 0) {
			return append(dst, "null"...)
		}
		return appendJSNumber(dst, f)
	case float64:
		return appendJSNumber(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case string:
		return appendJSString(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSString(dst, k)
			dst = append(dst, ':')
			dst = appendCanonical(dst, x[k])
		}
		return append(dst, '}')
	}
	// Not reachable for decoded JSON; encode through encoding/json and
	// canonicalise that, so the result is still stable.
	b, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	c, err := CanonicalJSON(b)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, c...)
}

// compareUTF16 orders strings by their UTF-16 code units, the order of
// JavaScript's default sort. It differs from byte order only between
// characters above U+FFFF and those in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := firstUnit(ra), firstUnit(rb)
			if ua != ub {
				return int(ua) - int(ub)
			}
			// Same high surrogate: the low surrogates decide.
			_, la := utf16.EncodeRune(ra)
			_, lb := utf16.EncodeRune(rb)
			return int(la) - int(lb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func firstUnit(r rune) uint16 {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return uint16(hi)
	}
	return uint16(r)
}

const hexDigits = "0123456789abcdef"

// appendJSString appends s quoted as JSON.stringify quotes it: only '"',
// '\\' and control characters are escaped; \b \f \n \r \t use their short
// forms, other controls \u00xx in lower case.
func appendJSString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSNumber appends f as JavaScript's Number.prototype.toString
// writes it (ECMA-262 Number::toString): the shortest digits that round-trip,
// plain decimal notation for 1e-7 < |f| < 1e21, otherwise exponent notation
// with an explicit sign ("1e+21", "1.5e-7"). NaN and infinities become null,
// as JSON.stringify writes them.
func appendJSNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0') // also -0
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		// Exact integers print as themselves; above 2^53 JavaScript prints
		// the shortest digits padded with zeros, handled below.
		return strconv.AppendInt(dst, int64(f), 10)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits and the decimal exponent.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d.ddddde±XX
	mant, exp, _ := strings.Cut(string(e), "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k := len(digits)
	n := x + 1 // the position of the decimal point relative to digits
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
