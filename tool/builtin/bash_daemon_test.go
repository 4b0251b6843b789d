package builtin

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/tool"
)

// Issue 17.7: a daemon that clears its environment (env -i), leaves the
// group (setsid) and double-forks escapes both the tag and the group, yet
// ends with the command that started it, without a sandbox.
func TestBashEndsDoubleForkedDaemon(t *testing.T) {
	defer goleak.VerifyNone(t)
	const marker = "300.7719"
	b := NewBash(BashOptions{Dir: t.TempDir()})
	cmd := "env -i setsid sh -c '(sleep " + marker + " >/dev/null 2>&1 &)'; sleep 0.1; echo started"
	res, err := b.Execute(context.Background(), bashCall(t, cmd, 0), func(tool.Partial) {})
	if err != nil || res.IsError {
		t.Fatalf("result %q, %v", res.Text(), err)
	}
	if d := bashDetails(t, res); d.Killed < 1 {
		t.Errorf("killed %d, want the daemon counted", d.Killed)
	}
	assertNoLeftovers(t, "sleep "+marker)
}

// The daemon of an aborted command ends too.
func TestBashAbortEndsDoubleForkedDaemon(t *testing.T) {
	defer goleak.VerifyNone(t)
	const marker = "300.7720"
	b := NewBash(BashOptions{Dir: t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	cmd := "env -i setsid sh -c '(sleep " + marker + " >/dev/null 2>&1 &)'; echo started; sleep 30"
	res, err := b.Execute(ctx, bashCall(t, cmd, 0), func(p tool.Partial) { cancel() })
	cancel()
	if err == nil || !bashDetails(t, res).Aborted {
		t.Fatalf("result %q, %v: want an aborted call", res.Text(), err)
	}
	assertNoLeftovers(t, "sleep "+marker)
}
