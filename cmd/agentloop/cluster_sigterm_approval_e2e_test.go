package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SIGTERM of the node whose run waits for an approval: the node exits
// after the drain (the wait does not hold it), the other node resumes the
// run at once (a handoff, not a lapsed lease), the call that was never
// approved does not run, and an answer to the old request on the other
// node is refused (409), not taken as if it reached the run.
func TestServeClusterSIGTERMDuringApproval(t *testing.T) {
	cr := startClusterRun(t, []string{envLeaseTTL + "=30s", envDrain + "=1s"}, []string{"--approve", "ask"},
		"-rounds", "1", "-text", "3", "-cmd", "echo start >> started.txt")
	apID := waitApprovalRequested(t, cr.other.sessionStream(t, cr.sessionID), cr.owner)
	sigtermHandsOff(t, cr) // within 15 s: handed off, not left to the 30 s lease
	if _, err := os.Stat(filepath.Join(cr.ws, "started.txt")); err == nil {
		t.Error("the call ran although it was never approved")
	}
	if code := cr.other.call(t, "POST", "/v1/approvals/"+apID, "", map[string]any{"decision": "allow_once"}, nil); code != 409 && code != 404 {
		t.Errorf("an answer to the request of the handed-off run: %d, want 409 or 404", code)
	}
	tr, err := pgSessions(t, cr.dsn).Load(t.Context(), cr.sessionID)
	if err != nil {
		t.Fatal(err)
	}
	results := checkTranscript(t, tr, "do it")
	if len(results) != 1 {
		t.Fatalf("results %q: want the one call settled once", results)
	}
	for _, text := range results {
		if !strings.Contains(text, "not run") {
			t.Errorf("the call's result %q does not say it was not run", text)
		}
		t.Logf("the unapproved call was settled: %q", text)
	}
}
