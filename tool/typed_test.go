package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

type greetArgs struct {
	Name  string   `json:"name" jsonschema:"who to greet"`
	Times int      `json:"times,omitempty" jsonschema:"how many times"`
	Tags  []string `json:"tags,omitempty"`
	Note  *string  `json:"note,omitempty"`
	Loud  bool     `json:"loud,omitempty"`
}

// A typed tool's schema comes from its Go type, and the Registry's
// coercions reach it decoded: "3" is 3, "true" is true, a lone string is a
// one-element list, and a property the type does not have is ignored.
func TestNewTypedTool(t *testing.T) {
	var got greetArgs
	greet := New("greet", "Greets someone.", func(_ context.Context, in greetArgs, report func(Partial)) (Result, error) {
		got = in
		return TextResult(strings.Repeat("hi "+in.Name+" ", in.Times)), nil
	})
	var schema map[string]any
	if err := json.Unmarshal(greet.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	props := schema["properties"].(map[string]any)
	if schema["type"] != "object" || props["name"].(map[string]any)["description"] != "who to greet" ||
		props["times"].(map[string]any)["type"] != "integer" || props["tags"].(map[string]any)["type"] != "array" || props["note"].(map[string]any)["type"] != "string" || len(schema["required"].([]any)) != 1 || schema["additionalProperties"] != nil {
		t.Errorf("schema %s", greet.Schema())
	}
	reg, err := NewRegistry(greet)
	if err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(context.Background(), llm.Content{Type: llm.ContentToolCall, ID: "c1", Name: "greet",
		Arguments: json.RawMessage(`{"name":"Ada","times":"3","tags":"x","loud":"true","mood":"cheerful"}`)}, nil)
	if res.IsError {
		t.Fatalf("result %+v", res)
	}
	if got.Name != "Ada" || got.Times != 3 || len(got.Tags) != 1 || got.Tags[0] != "x" || !got.Loud {
		t.Errorf("decoded %+v", got)
	}
	if res := reg.Execute(context.Background(), llm.Content{Type: llm.ContentToolCall, ID: "c2", Name: "greet", Arguments: json.RawMessage(`{"times":2}`)}, nil); !res.IsError {
		t.Errorf("a call without the required name ran: %+v", res)
	}
}

func TestNewPanicsOnATypeWithoutSchema(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	New("bad", "", func(context.Context, chan int, func(Partial)) (Result, error) { return Result{}, nil })
}
