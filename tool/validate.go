package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/llm"
)

// schema is a compiled tool schema.
type schema struct {
	root     *jsonschema.Schema
	resolved *jsonschema.Resolved
}

func compileSchema(raw json.RawMessage) (*schema, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parameters schema is not valid JSON schema: %w", err)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("parameters schema: %w", err)
	}
	return &schema{root: &s, resolved: res}, nil
}

// validate parses args, coerces them toward the schema, validates them and
// returns the coerced JSON. A nil schema accepts any JSON object.
func (s *schema) validate(args json.RawMessage) (json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("arguments are not valid JSON: there is more after the closing }; send one JSON object")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("arguments must be a JSON object")
	}
	if s == nil {
		return args, nil
	}
	v = coerce(v, s.root)
	// The validator wants float64 numbers, not json.Number; it checks a
	// copy, so the arguments keep their numbers exactly (an id of 19
	// digits does not become a rounded float).
	if err := s.resolved.Validate(plainNumbers(v)); err != nil {
		return nil, err
	}
	out, err := llm.MarshalJSON(canonicalNumbers(v))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// coerce converts values the way models need: a string where the schema
// says integer, number or boolean; a JSON-encoded string where it says
// object or array; a lone value where it says array. Values it cannot
// convert are left for the validator to reject.
func coerce(v any, s *jsonschema.Schema) any {
	if s == nil {
		return v
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if str, ok := v.(string); ok && !hasType(types, "string") {
		for _, t := range types {
			if c, ok := coerceString(str, t); ok {
				v = c
				break
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if ps, ok := s.Properties[k]; ok {
				x[k] = coerce(val, ps)
			} else if s.AdditionalProperties != nil {
				x[k] = coerce(val, s.AdditionalProperties)
			}
		}
		return x
	case []any:
		if s.Items != nil {
			for i := range x {
				x[i] = coerce(x[i], s.Items)
			}
		}
		return x
	}
	if hasType(types, "array") && !hasType(types, typeOf(v)) && v != nil {
		arr := []any{v}
		if s.Items != nil {
			arr[0] = coerce(v, s.Items)
		}
		return arr
	}
	return v
}

func coerceString(str, typ string) (any, bool) {
	t := strings.TrimSpace(str)
	switch typ {
	case "integer":
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return json.Number(strconv.FormatInt(n, 10)), true
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
			return json.Number(strconv.FormatFloat(f, 'f', -1, 64)), true
		}
	case "number":
		if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			if !json.Valid([]byte(t)) { // "+5", "0x10", ".5": Go reads them, JSON does not
				t = strconv.FormatFloat(f, 'g', -1, 64)
			}
			return json.Number(t), true
		}
	case "boolean":
		switch strings.ToLower(t) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	case "null":
		if t == "null" || t == "" {
			return nil, true
		}
	case "object", "array":
		var x any
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		if err := dec.Decode(&x); err == nil && typeOf(x) == typ {
			return x, true
		}
	}
	return nil, false
}

func hasType(types []string, t string) bool {
	for _, x := range types {
		if x == t || (t == "integer" && x == "number") {
			return true
		}
	}
	return false
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return ""
}

// plainNumbers returns a copy of v with every json.Number as a float64,
// as the validator wants them.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = plainNumbers(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = plainNumbers(x[i])
		}
		return out
	}
	return v
}

// canonicalNumbers rewrites in place the numbers of v that a Go tool could
// not decode into an integer field although they are whole ("5.0", "1e3")
// as integers; every other number keeps its literal.
func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return x
		}
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
	case map[string]any:
		for k, val := range x {
			x[k] = canonicalNumbers(val)
		}
	case []any:
		for i := range x {
			x[i] = canonicalNumbers(x[i])
		}
	}
	return v
}
