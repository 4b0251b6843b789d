package vectortest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// MutationMark is appended to every string a mutation changes.
const MutationMark = "\u2063mutated"

// Mutate returns a vector file (a JSON array of cases) with every expected
// value flipped, for the mutation check: an adapter that really checks a
// case must fail it on the mutated copy. It flips the case's "expected"
// and, inside "input", every value under a key that starts with "expect"
// or "derived", or is "assert" (the expectations of streaming ops).
// Booleans are negated, numbers changed, strings marked, null replaced by
// a string, an empty array or object given an element; the values of negative assertions (notContains,
// textNotContains, noneContains, noPartialContains) become "", which every
// text contains, and bounds (minCount, atLeast, *GreaterThan, lessThan)
// become impossible to meet.
func Mutate(data []byte) ([]byte, error) {
	out, _, err := MutateField(data, -1)
	return out, err
}

// Mutated is a case MutateField changed, and the fields it flipped.
type Mutated struct {
	Case   string
	Fields []string
}

// MutateField is Mutate flipping only the field-th expected field of each
// case (-1: all of them), and it returns the names of the cases it
// changed. A case's fields are the keys of its "expected" object, in
// sorted order (or "expected" itself when it is not an object), then the
// expectation keys inside "input", in sorted key order. Flipping one
// field at a time shows a field the adapter never reads, which flipping
// them all at once hides behind the fields it does.
func MutateField(data []byte, field int) ([]byte, []Mutated, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var cases []map[string]any
	if err := dec.Decode(&cases); err != nil {
		return nil, nil, err
	}
	var changed []Mutated
	for _, c := range cases {
		n, flipped := 0, []string(nil)
		flip := func(key string, v any) any {
			defer func() { n++ }()
			if field < 0 || n == field {
				flipped = append(flipped, key)
				return mutate(key, v)
			}
			return v
		}
		if e, ok := c["expected"]; ok && !isPointer(e) {
			if m, ok := e.(map[string]any); ok && len(m) > 0 {
				for _, k := range sortedKeys(m) {
					m[k] = flip(k, m[k])
				}
			} else {
				c["expected"] = flip("expected", e)
			}
		}
		if in, ok := c["input"]; ok {
			c["input"] = mutateExpectations(in, flip)
		}
		if field < 0 && n > 0 || field >= 0 && n > field {
			name, _ := c["name"].(string)
			changed = append(changed, Mutated{name, flipped})
		}
	}
	out, err := json.MarshalIndent(cases, "", "  ")
	return out, changed, err
}

// isPointer reports whether expected only points at the expectations in
// the input ("see input.ops[] expect*"): it is no expectation itself.
func isPointer(expected any) bool {
	s, ok := expected.(string)
	return ok && strings.HasPrefix(s, "see ")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mutateExpectations flips, with flip, the values of expectation keys
// anywhere in v.
func mutateExpectations(v any, flip func(string, any) any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if strings.HasPrefix(k, "expect") || strings.HasPrefix(k, "derived") || k == "assert" {
				x[k] = flip(k, x[k])
			} else {
				x[k] = mutateExpectations(x[k], flip)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = mutateExpectations(e, flip)
		}
	}
	return v
}

// mutate flips v, the value under key.
func mutate(key string, v any) any {
	_, number := v.(json.Number)
	switch {
	case key == "notContains" || key == "textNotContains" || key == "noneContains" || key == "noPartialContains":
		if _, ok := v.(string); ok {
			return ""
		}
		if a, ok := v.([]any); ok {
			return append(a, "")
		}
	case number && (key == "minCount" || key == "atLeast" || strings.HasSuffix(key, "GreaterThan")):
		return json.Number("1000000000") // a lower bound nothing meets
	case number && (key == "lessThan" || strings.HasSuffix(key, "LessThan")):
		return json.Number("-1000000000") // an upper bound nothing meets
	}
	switch x := v.(type) {
	case nil:
		return "null" + MutationMark
	case bool:
		return !x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return json.Number(fmt.Sprint(i + 1000003)) // far from any other value of the case
		}
		f, _ := x.Float64()
		return json.Number(fmt.Sprint(f*2 + 1))
	case string:
		return x + MutationMark
	case []any:
		if len(x) == 0 {
			return []any{"element" + MutationMark}
		}
		for i, e := range x {
			x[i] = mutate(key, e)
		}
		return x
	case map[string]any:
		if len(x) == 0 {
			return map[string]any{"key" + MutationMark: true}
		}
		for k, e := range x {
			x[k] = mutate(k, e)
		}
		return x
	}
	return v
}
