package gateway

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
)

// gateStore holds the gateway's store check (Resolve) while armed: the
// window between a run's run_end going out and the server finishing it.
type gateStore struct {
	*session.JSONLStore
	armed atomic.Bool
	gate  chan struct{}
}

func (g *gateStore) Resolve(id string) (string, error) {
	if g.armed.Load() {
		<-g.gate
	}
	return g.JSONLStore.Resolve(id)
}

// A run stream opened just after the run's run_end went out, whose start
// is older than the ring (resync), ends after the resync: it does not
// wait for a run_end that will never come again.
func TestRunStreamResyncAfterRunEnd(t *testing.T) {
	var gs *gateStore
	release := make(chan struct{})
	tsv := newTestServer(t, []faux.Step{held(release, "one two three four five six seven eight nine ten")},
		func(cfg *Config, tsv *testServer) {
			gs = &gateStore{JSONLStore: tsv.store, gate: make(chan struct{})}
			cfg.Store = gs
			cfg.Ring = RingLimit{Events: 4}
		})
	var once sync.Once
	open := func() { once.Do(func() { close(gs.gate) }) }
	defer open()
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	info, _ := tsv.startRun(sess.ID, "count", "a", "")
	gs.armed.Store(true) // the run's next look at the store is after its run_end
	close(release)
	st.until(t, "run_end") // out; the server has not finished the run yet
	got := tsv.events("/v1/runs/"+info.RunID+"/events?after=0", nil).rest(t)
	if len(got) != 1 || got[0].event != EventResync {
		t.Fatalf("the run stream sent %v, want one resync", types(got))
	}
	open()
}
