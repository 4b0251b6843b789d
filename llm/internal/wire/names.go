package wire

import "encoding/json"

// Names decodes the JSON strings that name event and block types, which
// arrive with every event: the names it knows decode without allocating.
type Names[T ~string] map[string]T

// NewNames returns Names that know names.
func NewNames[T ~string](names ...string) Names[T] {
	n := make(Names[T], len(names))
	for _, s := range names {
		n[`"`+s+`"`] = T(s)
	}
	return n
}

// Decode decodes the JSON string b, which need not be a known name.
func (n Names[T]) Decode(b []byte) (T, error) {
	if k, ok := n[string(b)]; ok {
		return k, nil
	}
	var s string
	err := json.Unmarshal(b, &s)
	return T(s), err
}
