package wrap_test

import (
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/llm/wrap"
)

// FuzzRepairArguments: a repair never panics and is always one JSON
// object.
func FuzzRepairArguments(f *testing.F) {
	for _, s := range []string{`{"a": 1,}`, `{'a': 'b'}`, `"{\"a\":1}"`, "```json\n{a: True}\n```", `{"a": "\`, `{'`, `{a:`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := wrap.RepairArguments(s)
		if !ok {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("repair of %q is %q: %v", s, out, err)
		}
	})
}
