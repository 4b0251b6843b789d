package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM of the node whose run waits for an approval: the node exits
// after the drain (the wait does not hold it), the other node resumes the
// run at once (a handoff, not a lapsed lease), the call that was never
// approved does not run, and an answer to the old request on the other
// node is refused (409), not taken as if it reached the run.
func TestServeClusterSIGTERMDuringApproval(t *testing.T) {
	cr := startClusterRun(t, []string{envLeaseTTL + "=30s", envDrain + "=1s"}, []string{"--approve", "ask"},
		"-rounds", "1", "-text", "3", "-cmd", "echo start >> started.txt")
	st := cr.other.sessionStream(t, cr.sessionID)
	var apID string
	timeout := time.After(20 * time.Second)
	for apID == "" {
		select {
		case ev := <-st:
			if ev.typ == "approval_requested" {
				apID, _ = ev.data["approvalId"].(string)
			}
		case <-timeout:
			t.Fatalf("no approval_requested on the other node: %s", cr.owner.stderr)
		}
	}
	if err := cr.owner.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	term := time.Now()
	select {
	case <-cr.owner.done:
	case <-time.After(8 * time.Second):
		t.Fatalf("the node waiting for an approval did not exit within 8 s of SIGTERM (drain 1 s): %s", cr.owner.stderr)
	}
	exited := time.Since(term)
	attempt := waitRunStatus(t, cr.db, cr.runID, "succeeded", 15*time.Second)
	t.Logf("node exited %s after SIGTERM; the run ended on the other node %s after it (attempt %d)",
		exited.Round(time.Millisecond), time.Since(term).Round(time.Millisecond), attempt)
	if attempt != 2 {
		t.Errorf("attempt %d, want 2 (one handoff)", attempt)
	}
	if time.Since(term) > 20*time.Second {
		t.Errorf("the run waited for the 30 s lease instead of the handoff")
	}
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
