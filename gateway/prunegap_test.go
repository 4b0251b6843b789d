package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/agentloop/agentloop/cluster"
)

// Events this node reads from the cluster's store after a hole (the
// events between were pruned by retention before the node's tail read
// them) are never replayed or streamed across it: live subscribers get a
// resync first, and a client resuming from before the hole gets a resync.
func TestClusterEventsAfterPrunedHoleResync(t *testing.T) {
	tsv := newTestServer(t, nil)
	sess := tsv.newSession()
	ss, e := tsv.s.session(sess.ID)
	if e != nil {
		t.Fatal(e)
	}
	sub, _, e := tsv.s.subscribe(sess.ID, "", -1)
	if e != nil {
		t.Fatal(e)
	}
	defer sub.Close()
	ss.emu.Lock()
	base := ss.seq
	for _, d := range []int64{1, 2, 10, 11} {
		seq := base + d
		tsv.s.deliverLocked(ss, cluster.Event{SessionID: ss.id, Seq: seq, Type: "x", Data: gatewayEvent("x", seq, "", ss.id, nil)})
	}
	ss.emu.Unlock()
	var got []string
	var seqs []int64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(got) < 5 {
		frames, err := sub.next(ctx, nil)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, f := range frames {
			got, seqs = append(got, f.typ), append(seqs, f.seq-base)
		}
	}
	if got[2] != EventResync || seqs[3] != 10 || got[3] != "x" {
		t.Fatalf("live frames %v at %v, want x x resync x x (the resync before seq 10)", got, seqs)
	}
	// A client resuming from seq 2, before the hole, must refetch.
	sub2, res, e := tsv.s.subscribe(sess.ID, "", base+2)
	if e != nil {
		t.Fatal(e)
	}
	defer sub2.Close()
	if !res.Resync || res.Replayed != 0 {
		t.Fatalf("resuming from before the hole: %+v, want a resync", res)
	}
	// One resuming after it replays contiguously.
	sub3, res, e := tsv.s.subscribe(sess.ID, "", base+10)
	if e != nil {
		t.Fatal(e)
	}
	defer sub3.Close()
	if res.Resync || res.Replayed != 1 {
		t.Fatalf("resuming after the hole: %+v, want seq 11 replayed", res)
	}
}
