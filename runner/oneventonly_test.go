package runner

import (
	"context"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
)

// A run started for a server that fans its events out from OnEvent keeps
// no copy of them for Run.Events: with OnEventOnly, none is held once the
// run ended (a long run's deltas would otherwise stay in memory until the
// Run is dropped); without it, every event waits there for a reader.
func TestStartOnEventOnlyKeepsNoQueue(t *testing.T) {
	reg := echoTools()
	r := testRunner(nil)
	defer r.Close()
	for _, only := range []bool{false, true} {
		seen := 0
		h, err := r.Start(context.Background(), Request{Prompt: "go", Model: faux.New(loopSteps()...), Tools: reg,
			OnEvent: func(Event) { seen++ }, OnEventOnly: only})
		if err != nil {
			t.Fatal(err)
		}
		if res, _ := h.Wait(); !res.OK() {
			t.Fatalf("only=%v: %s", only, res.Reason)
		}
		h.qmu.Lock()
		kept := len(h.q) - h.qhead
		h.qmu.Unlock()
		if seen < 200 {
			t.Fatalf("only=%v: OnEvent saw %d events, want the whole run", only, seen)
		}
		if only && kept != 0 {
			t.Errorf("OnEventOnly: %d events kept for Events, want none", kept)
		}
		if !only && kept != seen {
			t.Errorf("without OnEventOnly: %d events kept for Events, want all %d", kept, seen)
		}
		n := 0
		for _, err := range h.Events() {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if only && n != 0 {
			t.Errorf("OnEventOnly: Events yielded %d events, want none", n)
		}
	}
}
