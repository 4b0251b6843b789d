package google

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Gemini's function parameters are an OpenAPI 3.0 subset of JSON Schema:
// a request whose schema uses another keyword ($ref, additionalProperties,
// const, oneOf, type arrays, ...) is rejected as a whole. SanitizeSchema
// rewrites a tool's JSON schema into that subset, keeping its meaning where
// the subset can say it and dropping what it cannot.

// schemaKeys are the keywords Gemini accepts on a schema.
var schemaKeys = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true,
	"enum": true, "items": true, "properties": true, "required": true,
	"minItems": true, "maxItems": true, "minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "minProperties": true, "maxProperties": true,
	"anyOf": true, "propertyOrdering": true,
}

// formats lists, per type, the formats Gemini accepts.
var formats = map[string]map[string]bool{
	"string":  {"enum": true, "date-time": true},
	"integer": {"int32": true, "int64": true},
	"number":  {"float": true, "double": true},
}

// maxSchemaDepth bounds $ref expansion and nesting, so a recursive schema
// cannot make the request unbounded.
const maxSchemaDepth = 12

// SanitizeSchema returns the Gemini-acceptable form of a JSON schema for a
// tool's parameters. An empty schema, or an object schema without
// properties, gives nil: Gemini rejects an object with no properties, and a
// function without parameters is declared without them. A schema that is
// not a JSON object is also dropped.
func SanitizeSchema(schema json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil || root == nil {
		return nil
	}
	s := &sanitizer{defs: map[string]any{}}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := root[k].(map[string]any); ok {
			for name, v := range d {
				s.defs["#/"+k+"/"+name] = v
			}
		}
	}
	out := s.clean(root, 0)
	if props, _ := out["properties"].(map[string]any); len(props) == 0 {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}

type sanitizer struct {
	defs map[string]any
}

func (s *sanitizer) clean(in map[string]any, depth int) map[string]any {
	if depth > maxSchemaDepth {
		return map[string]any{"type": "object"}
	}
	// Resolve a local reference, keeping the referring schema's own
	// description.
	if ref, ok := in["$ref"].(string); ok {
		target, _ := s.defs[ref].(map[string]any)
		if target == nil {
			out := map[string]any{"type": "object"}
			if d, ok := in["description"].(string); ok && d != "" {
				out["description"] = d
			}
			return out
		}
		merged := make(map[string]any, len(target)+1)
		for k, v := range target {
			merged[k] = v
		}
		if d, ok := in["description"]; ok {
			merged["description"] = d
		}
		return s.clean(merged, depth+1)
	}
	out := map[string]any{}
	// allOf: merge the members into one schema.
	if all, ok := in["allOf"].([]any); ok {
		merged := map[string]any{}
		for k, v := range in {
			if k != "allOf" {
				merged[k] = v
			}
		}
		for _, m := range all {
			mm, _ := m.(map[string]any)
			if ref, ok := mm["$ref"].(string); ok {
				mm, _ = s.defs[ref].(map[string]any)
			}
			mergeSchema(merged, mm)
		}
		return s.clean(merged, depth+1)
	}
	for k, v := range in {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				out["type"] = t
			case []any:
				// ["string", "null"] → string, nullable.
				var types []string
				for _, x := range t {
					if xs, ok := x.(string); ok {
						if xs == "null" {
							out["nullable"] = true
						} else {
							types = append(types, xs)
						}
					}
				}
				if len(types) >= 1 {
					out["type"] = types[0]
				}
				if len(types) > 1 {
					alts := make([]any, len(types))
					for i, tt := range types {
						alts[i] = map[string]any{"type": tt}
					}
					delete(out, "type")
					out["anyOf"] = alts
				}
			}
		case "const":
			out["enum"] = []any{v}
		case "oneOf", "anyOf":
			alts, _ := v.([]any)
			var kept []any
			for _, a := range alts {
				am, _ := a.(map[string]any)
				if am == nil {
					continue
				}
				if t, _ := am["type"].(string); t == "null" && len(am) == 1 {
					out["nullable"] = true
					continue
				}
				kept = append(kept, s.clean(am, depth+1))
			}
			switch len(kept) {
			case 0:
			case 1:
				for kk, vv := range kept[0].(map[string]any) {
					if _, set := out[kk]; !set || kk == "type" {
						out[kk] = vv
					}
				}
			default:
				out["anyOf"] = kept
			}
		case "properties":
			props, _ := v.(map[string]any)
			cp := make(map[string]any, len(props))
			for name, p := range props {
				if pm, ok := p.(map[string]any); ok {
					cp[name] = s.clean(pm, depth+1)
				} else {
					cp[name] = map[string]any{}
				}
			}
			out["properties"] = cp
		case "items":
			switch it := v.(type) {
			case map[string]any:
				out["items"] = s.clean(it, depth+1)
			case []any: // tuple form: describe by its first member
				if len(it) > 0 {
					if im, ok := it[0].(map[string]any); ok {
						out["items"] = s.clean(im, depth+1)
					}
				}
			}
		case "exclusiveMinimum", "exclusiveMaximum":
			// Draft 6+ numbers become the inclusive bound (close enough
			// for a model's guidance; the tool validates the real one).
			bound := "minimum"
			if k == "exclusiveMaximum" {
				bound = "maximum"
			}
			if n, ok := v.(float64); ok {
				if _, set := in[bound]; !set {
					out[bound] = n
				}
			}
		default:
			if schemaKeys[k] {
				out[k] = v
			}
		}
	}
	s.fix(out)
	return out
}

// fix makes the keywords agree with each other the way Gemini checks them.
func (s *sanitizer) fix(out map[string]any) {
	t, _ := out["type"].(string)
	if f, ok := out["format"].(string); ok && !formats[t][f] {
		delete(out, "format")
	}
	// Gemini takes enums of strings only.
	if e, ok := out["enum"].([]any); ok {
		allStrings := true
		for _, x := range e {
			if _, ok := x.(string); !ok {
				allStrings = false
			}
		}
		switch {
		case allStrings && (t == "" || t == "string"):
			out["type"] = "string"
		default:
			delete(out, "enum")
			vals := make([]string, len(e))
			for i, x := range e {
				b, _ := json.Marshal(x)
				vals[i] = string(b)
			}
			out["description"] = describe(out, "One of: "+strings.Join(vals, ", ")+".")
		}
	}
	// required may only name properties that exist.
	if req, ok := out["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		kept := make([]any, 0, len(req))
		for _, r := range req {
			if name, ok := r.(string); ok && props[name] != nil {
				kept = append(kept, name)
			}
		}
		if len(kept) == 0 {
			delete(out, "required")
		} else {
			out["required"] = kept
		}
	}
	if t == "" && out["properties"] != nil && out["anyOf"] == nil {
		out["type"] = "object"
	}
	if t == "array" && out["items"] == nil {
		out["items"] = map[string]any{"type": "string"}
	}
}

// mergeSchema folds src into dst (for allOf): properties and required are
// united, other keywords kept from the first schema that has them.
func mergeSchema(dst, src map[string]any) {
	for k, v := range src {
		switch k {
		case "properties":
			dp, _ := dst["properties"].(map[string]any)
			if dp == nil {
				dp = map[string]any{}
			}
			if sp, ok := v.(map[string]any); ok {
				for name, p := range sp {
					dp[name] = p
				}
			}
			dst["properties"] = dp
		case "required":
			dr, _ := dst["required"].([]any)
			if sr, ok := v.([]any); ok {
				dr = append(dr, sr...)
			}
			dst["required"] = dr
		default:
			if _, set := dst[k]; !set {
				dst[k] = v
			}
		}
	}
}

// describe returns the schema's description with extra appended.
func describe(s map[string]any, extra string) string {
	d, _ := s["description"].(string)
	switch {
	case d == "":
		return extra
	case extra == "":
		return d
	}
	return d + " " + extra
}
