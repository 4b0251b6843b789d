package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/llm"
)

// New returns a tool whose arguments are a Go value of type In, usually a
// struct. Its JSON Schema is derived from In (SchemaFor): a field's name is
// its json tag's, its description its jsonschema tag, and it is required
// unless tagged omitempty or omitzero. The Registry validates and coerces a
// call's arguments against that schema as for any tool (the coercions a
// model needs: "5" for 5, "true" for true, a lone value for a one-element
// array), then run gets them decoded into In. report, never nil, sends
// progress.
//
// New panics if In has no JSON Schema (a func, a channel): that is a
// mistake in the program, not in a call.
func New[In any](name, description string, run func(ctx context.Context, in In, report func(Partial)) (Result, error)) *Func {
	s, err := SchemaFor[In]()
	if err != nil {
		panic(fmt.Sprintf("tool.New(%q): %v", name, err))
	}
	raw, err := llm.MarshalJSON(s)
	if err != nil {
		panic(fmt.Sprintf("tool.New(%q): schema: %v", name, err))
	}
	return &Func{ToolName: name, ToolDescription: description, Parameters: raw,
		Run: func(ctx context.Context, call Call, update func(Partial)) (Result, error) {
			var in In
			if err := DecodeArgs(call, &in); err != nil {
				return Result{}, err
			}
			return run(ctx, in, update)
		}}
}

// SchemaFor derives the JSON Schema of the arguments In stands for, with
// github.com/google/jsonschema-go. Unlike that package's default, objects
// accept properties the schema does not name (models add some, and a call
// should not fail for a field the tool ignores), and a pointer or slice
// field is of its element's type, not also "null" (an optional argument is
// left out, and some providers refuse type lists). A caller may refine the
// result (a minimum, an enum) before using it.
func SchemaFor[In any]() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, err
	}
	tidy(s)
	return s, nil
}

// tidy drops "additionalProperties": false and "null" from the type lists
// of s and the schemas inside it.
func tidy(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Not != nil {
		s.AdditionalProperties = nil
	}
	if len(s.Types) == 2 && (s.Types[0] == "null" || s.Types[1] == "null") {
		s.Type = s.Types[0]
		if s.Type == "null" {
			s.Type = s.Types[1]
		}
		s.Types = nil
	}
	for _, p := range s.Properties {
		tidy(p)
	}
	tidy(s.Items)
}

// DecodeArgs decodes a call's validated arguments into v; no arguments
// leave v as it is.
func DecodeArgs(call Call, v any) error {
	if len(call.Args) == 0 {
		return nil
	}
	if err := json.Unmarshal(call.Args, v); err != nil {
		return fmt.Errorf("arguments of %s: %v", call.Name, err)
	}
	return nil
}
