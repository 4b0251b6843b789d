package loopguard_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/tool"
)

// BenchmarkGuardCall is the guard's cost per tool call (Before, After and
// Annotate) with a full 30-call history of varied calls.
func BenchmarkGuardCall(b *testing.B) {
	g := loopguard.New(nil)
	calls := make([]tool.Call, 64)
	for i := range calls {
		calls[i] = tool.Call{ID: fmt.Sprint("c", i), Name: "read",
			Args: json.RawMessage(fmt.Sprintf(`{"path":"/src/file%d.go","offset":%d,"limit":200}`, i%40, i))}
	}
	res := tool.TextResult("package main\n\nfunc main() {}\n")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := calls[i%len(calls)]
		g.Before(c)
		g.After(c, res)
		g.Annotate(c, res)
	}
}

func BenchmarkCanonicalJSON(b *testing.B) {
	args := []byte(`{"path":"/src/main.go","edits":[{"old":"a < b && c","new":"a <= b"}],"limit":200,"ratio":0.25}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := loopguard.CanonicalJSON(args); err != nil {
			b.Fatal(err)
		}
	}
}
