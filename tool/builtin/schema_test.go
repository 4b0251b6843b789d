package builtin

import (
	"encoding/json"
	"slices"
	"testing"
)

// The built-in tools' schemas are derived from their argument types: the
// required fields, the descriptions and the bounds the tags and refinements
// give.
func TestBuiltinSchemas(t *testing.T) {
	type prop struct {
		Type        string   `json:"type"`
		Description string   `json:"description"`
		Minimum     *float64 `json:"minimum"`
		MinItems    *int     `json:"minItems"`
	}
	tests := []struct {
		name     string
		schema   json.RawMessage
		required []string
		min      map[string]float64
	}{
		{"read", readSchema(), []string{"path"}, map[string]float64{"limit": 1}},
		{"write", writeSchema(), []string{"path", "content"}, nil},
		{"edit", editSchema(), []string{"path"}, nil},
		{"ls", lsSchema(), nil, map[string]float64{"limit": 1}},
		{"find", findSchema(), []string{"pattern"}, map[string]float64{"limit": 1}},
		{"grep", grepSchema(), []string{"pattern"}, map[string]float64{"limit": 1, "context": 0}},
		{"bash", bashSchema(), []string{"command"}, nil},
	}
	for _, tc := range tests {
		var s struct {
			Type       string          `json:"type"`
			Properties map[string]prop `json:"properties"`
			Required   []string        `json:"required"`
		}
		if err := json.Unmarshal(tc.schema, &s); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s.Type != "object" || !slices.Equal(s.Required, tc.required) {
			t.Errorf("%s: type %q, required %v; want object, %v", tc.name, s.Type, s.Required, tc.required)
		}
		for name, p := range s.Properties {
			if p.Description == "" || p.Type == "" {
				t.Errorf("%s.%s has no description or type: %+v", tc.name, name, p)
			}
		}
		for name, want := range tc.min {
			if p := s.Properties[name]; p.Minimum == nil || *p.Minimum != want {
				t.Errorf("%s.%s minimum %v, want %v", tc.name, name, p.Minimum, want)
			}
		}
	}
	var e struct {
		Properties map[string]prop `json:"properties"`
	}
	_ = json.Unmarshal(editSchema(), &e)
	if p := e.Properties["edits"]; p.Type != "array" || p.MinItems == nil || *p.MinItems != 1 {
		t.Errorf("edit.edits %+v, want an array of at least one", p)
	}
}
