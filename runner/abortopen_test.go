package runner

import (
	"context"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
)

// slowOpenStore holds the opening of a session until the run's context
// ends, as a database store does on a loaded machine.
type slowOpenStore struct {
	session.Store
	opening chan struct{}
}

func (s slowOpenStore) Create(ctx context.Context, _ session.CreateOptions) (session.Session, error) {
	close(s.opening)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A run aborted while its session is being opened (after run_start)
// ends with run_end reason aborted, not with no reason at all.
func TestAbortWhileOpeningSession(t *testing.T) {
	st := slowOpenStore{Store: session.NewJSONLStore(t.TempDir()), opening: make(chan struct{})}
	r, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var end *Result
	h, err := r.Start(context.Background(), Request{Prompt: "go", Model: faux.New(faux.Say("never")), OnEvent: func(ev Event) {
		if ev.Type == EventRunEnd {
			mu.Lock()
			end = ev.End
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	<-st.opening
	h.Abort()
	res, _ := h.Wait()
	mu.Lock()
	defer mu.Unlock()
	if end == nil || end.Reason != ReasonAborted || res.Reason != ReasonAborted {
		t.Fatalf("run_end %+v, result %+v: want reason %s in both", end, res, ReasonAborted)
	}
}
