package compact

import (
	"context"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// Issue 16.3: providers that number tool-call ids per response (Kimi K2's
// functions.read:0 in every turn) reuse one id for every result. Shortening
// one result must leave the others with that id as they are.
func TestTruncationKeepsOtherResultsOfARepeatedID(t *testing.T) {
	h := newHarness(t, Config{Window: 128_000, DisableMicrocompact: true}, &fakeModel{})
	var msgs []llm.Message
	for range 10 {
		msgs = append(msgs, user("next"), assistant("", call("functions.read:0", "read", `{"path":"f.txt"}`)),
			result("functions.read:0", "read", rep("line of output\n", 39_000/15)))
	}
	msgs = append(msgs, user("last"), assistant("", call("functions.read:0", "read", `{"path":"g.txt"}`)),
		result("functions.read:0", "read", "tiny"), assistant("done"))
	msgs = stamp(msgs...)
	for range 2 { // the first call decides, the second applies what was decided
		out, err := h.c.TransformContext(context.Background(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.rec.truncations) == 0 {
			t.Fatal("no truncations recorded")
		}
		if got := out[len(out)-2].Text(); got != "tiny" {
			t.Fatalf("the last result reads %.80q, want it untouched", got)
		}
	}
}
