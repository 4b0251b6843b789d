package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

func echoTool() *Func {
	return &Func{
		ToolName:        "echo",
		ToolDescription: "echo the arguments",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean"},
			"tags":{"type":"array","items":{"type":"string"}},
			"opts":{"type":"object","properties":{"deep":{"type":"boolean"}}},
			"s":{"type":"string"}},"required":["n"],"additionalProperties":false}`),
		Run: func(ctx context.Context, call Call, _ func(Partial)) (Result, error) {
			return TextResult(string(call.Args)), nil
		},
	}
}

func TestPrepareCoercion(t *testing.T) {
	r, err := NewRegistry(echoTool())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args, want string
		wantErr          string
	}{
		{"integer from string", `{"n":"5"}`, `{"n":5}`, ""},
		{"float integer from string", `{"n":"5.0"}`, `{"n":5}`, ""},
		{"number from string", `{"n":1,"f":"2.5"}`, `{"f":2.5,"n":1}`, ""},
		{"boolean from string", `{"n":1,"b":"true"}`, `{"b":true,"n":1}`, ""},
		{"boolean case", `{"n":1,"b":"FALSE"}`, `{"b":false,"n":1}`, ""},
		{"array from JSON string", `{"n":1,"tags":"[\"a\",\"b\"]"}`, `{"n":1,"tags":["a","b"]}`, ""},
		{"array from lone value", `{"n":1,"tags":"a"}`, `{"n":1,"tags":["a"]}`, ""},
		{"object from JSON string", `{"n":1,"opts":"{\"deep\":\"true\"}"}`, `{"n":1,"opts":{"deep":true}}`, ""},
		{"string stays string", `{"n":1,"s":"5"}`, `{"n":1,"s":"5"}`, ""},
		{"big integer keeps every digit", `{"n":1234567890123456789}`, `{"n":1234567890123456789}`, ""},
		{"whole float becomes an integer", `{"n":5.0,"f":1e3}`, `{"f":1000,"n":5}`, ""},
		{"number from a string JSON does not allow", `{"n":"+5","f":".5"}`, `{"f":0.5,"n":5}`, ""},
		{"fraction keeps its literal", `{"n":1,"f":0.1}`, `{"f":0.1,"n":1}`, ""},
		{"trailing data", `{"n":1} {"n":2}`, "", "more after the closing }"},
		{"not an integer", `{"n":"five"}`, "", "Invalid arguments"},
		{"fraction is not an integer", `{"n":"5.5"}`, "", "Invalid arguments"},
		{"missing required", `{}`, "", "Invalid arguments"},
		{"unknown property", `{"n":1,"zzz":2}`, "", "Invalid arguments"},
		{"not JSON", `{"n":`, "", "not valid JSON"},
		{"not an object", `[1]`, "", "must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, bad := r.Prepare(llm.ToolCall("c1", "echo", json.RawMessage(tt.args)))
			if tt.wantErr != "" {
				if bad == nil || !bad.IsError || !strings.Contains(bad.Text(), tt.wantErr) {
					t.Fatalf("Prepare(%s) = %+v, want error containing %q", tt.args, bad, tt.wantErr)
				}
				if !strings.Contains(bad.Text(), "Received arguments") && tt.wantErr == "Invalid arguments" {
					t.Errorf("error result does not quote the arguments: %s", bad.Text())
				}
				return
			}
			if bad != nil {
				t.Fatalf("Prepare(%s): unexpected error %s", tt.args, bad.Text())
			}
			if string(call.Args) != tt.want {
				t.Errorf("args = %s, want %s", call.Args, tt.want)
			}
		})
	}
}

func TestRunFailures(t *testing.T) {
	boom := &Func{ToolName: "boom", Run: func(context.Context, Call, func(Partial)) (Result, error) {
		panic("kaboom")
	}}
	fail := &Func{ToolName: "fail", Run: func(context.Context, Call, func(Partial)) (Result, error) {
		return Result{}, errors.New("disk on fire")
	}}
	slow := &Func{ToolName: "slow", Run: func(ctx context.Context, _ Call, _ func(Partial)) (Result, error) {
		<-ctx.Done()
		return Result{}, ctx.Err()
	}}
	r, err := NewRegistry(boom, fail, slow)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if res := r.Execute(ctx, llm.ToolCall("1", "boom", nil), nil); !res.IsError || !strings.Contains(res.Text(), "kaboom") {
		t.Errorf("panic result = %+v", res)
	}
	if res := r.Execute(ctx, llm.ToolCall("2", "fail", nil), nil); !res.IsError || res.Text() != "disk on fire" {
		t.Errorf("error result = %+v", res)
	}
	if res := r.Execute(ctx, llm.ToolCall("3", "nope", nil), nil); !res.IsError || !strings.Contains(res.Text(), `"nope" not found`) || !strings.Contains(res.Text(), "boom, fail, slow") {
		t.Errorf("unknown tool result = %+v", res)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if res := r.Execute(cctx, llm.ToolCall("4", "slow", nil), nil); !res.IsError || !strings.HasPrefix(res.Text(), "aborted") {
		t.Errorf("aborted result = %+v", res)
	}
	inner := &Func{ToolName: "inner", Run: func(context.Context, Call, func(Partial)) (Result, error) {
		return Result{}, fmt.Errorf("the MCP session ended: %w", context.Canceled)
	}}
	r2, _ := NewRegistry(inner)
	if res := r2.Execute(ctx, llm.ToolCall("5", "inner", nil), nil); !res.IsError || !strings.Contains(res.Text(), "MCP session ended") {
		t.Errorf("a tool's own cancellation error, with the call still live = %+v, want its text", res)
	}
	if _, err := NewRegistry(fail, fail); err == nil {
		t.Error("duplicate tool names were accepted")
	}
}

func TestConcurrencySafe(t *testing.T) {
	safe := &Func{ToolName: "safe", Concurrent: true}
	r, _ := NewRegistry(safe, echoTool())
	if !r.ConcurrencySafe(Call{Name: "safe"}) {
		t.Error("safe tool is not concurrency-safe")
	}
	if r.ConcurrencySafe(Call{Name: "echo"}) || r.ConcurrencySafe(Call{Name: "missing"}) {
		t.Error("exclusive or unknown tool reported safe")
	}
}

// Prepare runs on every tool call: lookup, coercion, validation.
func BenchmarkPrepare(b *testing.B) {
	r, err := NewRegistry(echoTool())
	if err != nil {
		b.Fatal(err)
	}
	block := llm.ToolCall("c1", "echo", json.RawMessage(`{"n":"5","f":2.5,"b":true,"tags":["a","b"],"opts":{"deep":false},"s":"some text"}`))
	b.ReportAllocs()
	for b.Loop() {
		if _, bad := r.Prepare(block); bad != nil {
			b.Fatal(bad.Text())
		}
	}
}
