package wire_test

import (
	"testing"

	"github.com/agentloop/agentloop/llm/internal/wire"
)

func TestNames(t *testing.T) {
	type kind string
	names := wire.NewNames[kind]("text", "tool_use")
	for _, tt := range []struct {
		in   string
		want kind
		ok   bool
	}{
		{`"text"`, "text", true},
		{`"server_tool_use"`, "server_tool_use", true},
		{`"t\u0065xt"`, "text", true},
		{`42`, "", false},
	} {
		got, err := names.Decode([]byte(tt.in))
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("Decode(%s) = %q, %v", tt.in, got, err)
		}
	}
	known := []byte(`"tool_use"`)
	if n := testing.AllocsPerRun(100, func() { names.Decode(known) }); n != 0 {
		t.Errorf("a known name costs %v allocations", n)
	}
}
