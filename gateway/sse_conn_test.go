package gateway

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
)

// A run's SSE stream that ends at its run_end leaves its connection fit
// for the next request on it (keep-alive): the stream's deadline watcher
// used to wake after the handler returned and set a write deadline on the
// reused connection, so a later request failed with EOF (one in about a
// hundred).
func TestRunStreamLeavesConnectionUsable(t *testing.T) {
	steps := make([]faux.Step, 120)
	for i := range steps {
		steps[i] = faux.Say("x")
	}
	tsv := newTestServer(t, steps)
	sess := tsv.newSession()
	for i := range steps {
		info, code := tsv.startRun(sess.ID, "go", "k"+strconv.Itoa(i), "")
		if code != http.StatusAccepted {
			t.Fatalf("run %d: %d", i, code)
		}
		tsv.events("/v1/runs/"+info.RunID+"/events", nil).rest(t)
	}
}
