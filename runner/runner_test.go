package runner_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

func newRunner(t *testing.T, cfg runner.Config) *runner.Runner {
	t.Helper()
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// started is closed once h's agent has started (or h has ended); it reads
// h's events.
func started(t *testing.T, h *runner.Run) <-chan struct{} {
	t.Helper()
	c := make(chan struct{})
	go func() {
		defer close(c)
		for ev, err := range h.Events() {
			if err != nil || ev.Type == agent.EventAgentStart {
				return
			}
		}
	}()
	return c
}

// Two Runners in one process have their own lanes and registries: a run
// that waits for a lane slot on one is not held up by the other's runs, and
// each lists only its own.
func TestTwoRunnersShareNothing(t *testing.T) {
	hold := make(chan struct{})
	one := newRunner(t, runner.Config{LaneCaps: map[string]int{runner.LaneMain: 1}})
	two := newRunner(t, runner.Config{LaneCaps: map[string]int{runner.LaneMain: 2}})
	start := func(r *runner.Runner, key string) *runner.Run {
		h, err := r.Start(context.Background(), runner.Request{Prompt: key, SessionKey: key, Model: faux.New(faux.Say("ok").WithHold(hold))})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a1 := start(one, "a1")
	<-started(t, a1)
	b1, b2 := start(two, "b1"), start(two, "b2")
	<-started(t, b1)
	<-started(t, b2) // two's cap is 2: both run while one's slot is taken
	a2 := start(one, "a2")

	keys := func(runs []*runner.Run) []string {
		var out []string
		for _, h := range runs {
			out = append(out, h.Key())
		}
		return out
	}
	if got := keys(one.Active()); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("one.Active() = %v, want [a1] (a2 waits in its lane)", got)
	}
	if got := keys(two.Active()); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Errorf("two.Active() = %v, want [b1 b2]", got)
	}
	select {
	case <-a2.Done():
		t.Fatal("a2 ended while one's only slot was taken")
	case <-time.After(20 * time.Millisecond):
	}
	close(hold)
	for _, h := range []*runner.Run{a1, a2, b1, b2} {
		if res, err := h.Wait(); err != nil || !res.OK() {
			t.Errorf("run %s: %v %+v", h.Key(), err, res)
		}
	}
	if len(one.Active())+len(two.Active()) != 0 {
		t.Error("runs still listed after they ended")
	}
}

// seq grows by one across the runs of a session; every run starts with
// run_start and ends with run_end, with its own runId.
func TestSeqAcrossRunsOfASession(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	r := newRunner(t, runner.Config{Store: store})
	m := faux.New(faux.Say("one"), faux.Say("two"))
	var all []runner.Event
	sessionID := ""
	for i, prompt := range []string{"first", "second"} {
		h, err := r.Start(t.Context(), runner.Request{Prompt: prompt, Model: m, Session: runner.SessionSpec{ID: sessionID, Cwd: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		var evs []runner.Event
		for ev, err := range h.Events() {
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
		if evs[0].Type != runner.EventRunStart || evs[len(evs)-1].Type != runner.EventRunEnd || !evs[len(evs)-1].End.OK() {
			t.Fatalf("run %d: first %s, last %s", i, evs[0].Type, evs[len(evs)-1].Type)
		}
		if i == 1 && !evs[0].Start.Resumed {
			t.Error("the second run's run_start does not say it resumed")
		}
		for _, ev := range evs {
			if ev.RunID != h.ID() || ev.SessionID != h.SessionID() || h.SessionID() == "" {
				t.Fatalf("event %s of run %s has envelope %s/%s", ev.Type, h.ID(), ev.RunID, ev.SessionID)
			}
		}
		sessionID = h.SessionID()
		all = append(all, evs...)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d (%s) has seq %d", i+1, ev.Type, ev.Seq)
		}
	}
}

// A session named before its first run (ACP's session/new) is created
// under that name; the next run opens it by that name.
func TestSessionNewCreatesNamedSession(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	r := newRunner(t, runner.Config{Store: store})
	m := faux.New(faux.Say("one"), faux.Say("two"))
	id := session.NewSessionID()
	cwd := t.TempDir()
	res, err := r.Run(t.Context(), runner.Request{Prompt: "first", Model: m, Session: runner.SessionSpec{ID: id, New: true, Cwd: cwd}})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	if res.SessionID != id {
		t.Fatalf("session %q, want the named %q", res.SessionID, id)
	}
	res, err = r.Run(t.Context(), runner.Request{Prompt: "second", Model: m, Session: runner.SessionSpec{ID: id, Cwd: cwd}})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	tr, err := store.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.Context(tr.Leaf).Messages); n != 4 {
		t.Fatalf("the named session holds %d messages, want 4", n)
	}
}

// Close aborts what runs, waits for it, and refuses new runs; the package's
// goleak check then finds nothing left.
func TestCloseAbortsRuns(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	r, err := runner.New(runner.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Start(context.Background(), runner.Request{Prompt: "go", Model: faux.New(faux.Say("x").WithHold(hold))})
	if err != nil {
		t.Fatal(err)
	}
	<-started(t, h)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("Close returned before its run ended")
	}
	if res, _ := h.Wait(); res.Reason != runner.ReasonAborted {
		t.Errorf("closed run ended %q", res.Reason)
	}
	if _, err := r.Start(context.Background(), runner.Request{Prompt: "go", Model: faux.New(faux.Say("x"))}); err != runner.ErrClosed {
		t.Errorf("Start after Close: %v", err)
	}
}

// Steering and follow-ups given before the agent starts (while the run
// waits in its lane) reach it.
func TestFollowUpBeforeTheAgentStarts(t *testing.T) {
	hold := make(chan struct{})
	r := newRunner(t, runner.Config{LaneCaps: map[string]int{runner.LaneMain: 1}})
	m := faux.New(faux.Say("busy").WithHold(hold))
	first, err := r.Start(t.Context(), runner.Request{Prompt: "a", SessionKey: "a", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	<-started(t, first)
	second, err := r.Start(t.Context(), runner.Request{Prompt: "b", SessionKey: "b", Model: faux.New(faux.Say("one"), faux.Say("two"))})
	if err != nil {
		t.Fatal(err)
	}
	if !second.FollowUp("and then?") {
		t.Fatal("FollowUp of a queued run refused")
	}
	close(hold)
	first.Wait()
	res, err := second.Wait()
	if err != nil || !res.OK() {
		t.Fatalf("%v %+v", err, res)
	}
	var texts []string
	for _, m := range res.Messages {
		texts = append(texts, m.Text())
	}
	if !slices.Contains(texts, "and then?") || texts[len(texts)-1] != "two" {
		t.Errorf("messages %q, want the follow-up answered", texts)
	}
}
