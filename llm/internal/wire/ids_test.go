package wire_test

import (
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm/internal/wire"
)

// Ids repeated across turns (Kimi K2 numbers them per response) become
// unique in the request, and every result gets the id sent for its call.
func TestCallIDsRepeatedAcrossTurns(t *testing.T) {
	ids := wire.NewCallIDs(40)
	var calls, results []string
	for turn := 0; turn < 3; turn++ {
		ids.Turn()
		calls = append(calls, ids.Call("functions.weather:0"), ids.Call("functions.weather:1"))
		results = append(results, ids.Result("functions.weather:0"), ids.Result("functions.weather:1"))
	}
	seen := map[string]bool{}
	for i, c := range calls {
		if seen[c] {
			t.Errorf("id %q sent twice: %v", c, calls)
		}
		seen[c] = true
		if results[i] != c {
			t.Errorf("result %d answers %q, its call was sent as %q", i, results[i], c)
		}
	}
	if calls[0] != "functions_weather_0" {
		t.Errorf("first use %q, want the sanitised id unchanged", calls[0])
	}
}

// Two calls with one id in one message are answered in order; ids that
// fold together once sanitised, or are cut at the limit, stay apart.
func TestCallIDsCollisions(t *testing.T) {
	ids := wire.NewCallIDs(40)
	ids.Turn()
	long := strings.Repeat("x", 45)
	sent := []string{ids.Call("call_0"), ids.Call("call_0"), ids.Call("a.b"), ids.Call("a:b"), ids.Call(long + "1"), ids.Call(long + "2")}
	seen := map[string]bool{}
	for _, s := range sent {
		if seen[s] || len(s) > 40 {
			t.Errorf("sent %q (len %d) twice or too long: %v", s, len(s), sent)
		}
		seen[s] = true
	}
	if a, b := ids.Result("call_0"), ids.Result("call_0"); a != sent[0] || b != sent[1] {
		t.Errorf("results %q %q, want %q %q", a, b, sent[0], sent[1])
	}
	// A result for no open call keeps its fitted id.
	if got := ids.Result("no.such"); got != "no_such" {
		t.Errorf("orphan result id %q", got)
	}
	// Without a limit ids are only made unique.
	raw := wire.NewCallIDs(0)
	raw.Turn()
	if a, b := raw.Call("fc.1|x"), raw.Call("fc.1|x"); a != "fc.1|x" || b != "fc.1|x_2" {
		t.Errorf("unlimited ids %q %q", a, b)
	}
}
