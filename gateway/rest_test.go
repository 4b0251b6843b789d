package gateway

import (
	"net/http"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
)

// A run started over REST streams its events over SSE, ends, and its
// transcript is readable.
func TestRunOverREST(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Call("", "echo", map[string]any{"text": "hi"}), faux.Say("done")})
	sess := tsv.newSession()
	info, st := tsv.startRun(sess.ID, "say hi", "k1", "")
	if st != http.StatusAccepted || info.RunID == "" {
		t.Fatalf("start: %d %+v", st, info)
	}
	msgs := tsv.events("/v1/runs/"+info.RunID+"/events", nil).rest(t)
	if len(msgs) == 0 || msgs[len(msgs)-1].event != "run_end" {
		t.Fatalf("run stream: %v", types(msgs))
	}
	var run Run
	tsv.do("GET", "/v1/runs/"+info.RunID, nil, &run)
	if run.Status != RunSucceeded {
		t.Fatalf("run: %+v", run)
	}
	var page MessagePage
	tsv.do("GET", "/v1/sessions/"+sess.ID+"/messages", nil, &page)
	if len(page.Entries) < 4 {
		t.Fatalf("messages: %d entries", len(page.Entries))
	}
}
