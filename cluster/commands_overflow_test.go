package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// A run that has not read its commands yet loses none: more commands than
// its channel holds wait in the table for the next delivery, in order,
// each delivered once (an approval's answer among them would otherwise be
// lost, and the run would wait for it for ever).
func TestCommandsBeyondTheChannelWait(t *testing.T) {
	ns, _ := nodes(t, 2, fast)
	a, b := ns[0], ns[1]
	ctx := context.Background()
	runID, _, err := b.Enqueue(ctx, EnqueueOptions{SessionID: "busy", Cwd: "/a"})
	if err != nil {
		t.Fatal(err)
	}
	ca := waitClaim(t, a, 5*time.Second)
	const n = 70 // the channel holds 64
	for i := range n {
		if err := b.Send(ctx, runID, CommandSteer, json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	// Let deliveries fill the channel before anything is read.
	deadline := time.Now().Add(5 * time.Second)
	for len(ca.cmds) < cap(ca.cmds) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * fast.Heartbeat) // more deliveries meet the full channel
	for i := range n {
		select {
		case cmd := <-ca.Commands():
			if want := fmt.Sprintf(`{"text":"m%d"}`, i); string(cmd.Payload) != want {
				t.Fatalf("command %d is %s, want %s", i, cmd.Payload, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d commands reached the run", i, n)
		}
	}
	select {
	case cmd := <-ca.Commands():
		t.Fatalf("a command was delivered twice: %s", cmd.Payload)
	case <-time.After(3 * fast.Heartbeat):
	}
}
