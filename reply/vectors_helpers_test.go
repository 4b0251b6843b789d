package reply_test

import (
	"bytes"
	"encoding/json"
	"github.com/agentloop/agentloop/internal/vectortest"
	"strings"
	"testing"
)

// vectorCase is one case of the reference vectors (OpenClaw's own tests as
// data, read from shared/reference/vectors beside the checkout, or from
// AGENTLOOP_VECTORS).
type vectorCase struct {
	Name     string          `json:"name"`
	Function string          `json:"function"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
	Note     string          `json:"note"`
}

func loadVectors(t *testing.T, file string) []vectorCase {
	t.Helper()
	data := vectortest.Read(t, file)
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	data, _ = json.Marshal(expand(raw))
	var cases []vectorCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s has no cases", file)
	}
	return cases
}

// expand replaces the encoding helpers {"$repeat": s, "count": n} and
// {"$concat": [...]} with the strings they stand for.
func expand(v any) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = expand(x[i])
		}
		return x
	case map[string]any:
		if r, ok := x["$repeat"].(string); ok {
			return strings.Repeat(r, int(x["count"].(float64)))
		}
		if parts, ok := x["$concat"].([]any); ok {
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(expand(p).(string))
			}
			return b.String()
		}
		for k := range x {
			x[k] = expand(x[k])
		}
		return x
	}
	return v
}

// unmarshalStrict is unmarshal that fails on a field v does not have: a
// field a case states that the adapter does not know is never skipped
// over silently.
func unmarshalStrict(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("no adapter for a field of %s: %v", data, err)
	}
}

func unmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}
