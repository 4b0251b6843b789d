package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
)

func TestLanesFIFOAndCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		perSession := map[string]int{}
		global, maxGlobal, violations := 0, 0, 0
		var order []string
		m := faux.New(faux.Func(func(ctx context.Context, req *llm.Request) faux.Step {
			key := req.Messages[len(req.Messages)-1].Text()
			sess := strings.SplitN(key, "/", 2)[0]
			mu.Lock()
			perSession[sess]++
			global++
			if perSession[sess] > 1 {
				violations++
			}
			maxGlobal = max(maxGlobal, global)
			order = append(order, key)
			mu.Unlock()
			time.Sleep(time.Second) // fake time: every run overlaps the others
			mu.Lock()
			perSession[sess]--
			global--
			mu.Unlock()
			return faux.Say("done " + key)
		}))
		m.Repeat = true
		r := testRunner(nil)
		var wg sync.WaitGroup
		waits := 0
		var wmu sync.Mutex
		for i := range 50 {
			sess := fmt.Sprintf("s%d", i%5)
			key := fmt.Sprintf("%s/%02d", sess, i)
			wg.Go(func() {
				res, err := r.runParams(t.Context(), params{Prompt: key, SessionKey: sess, Model: m, OnEvent: func(ev Event) {
					if ev.Type == EventLaneWait {
						wmu.Lock()
						waits++
						wmu.Unlock()
					}
				}})
				if err != nil || !res.OK() {
					t.Errorf("run %s: %v %+v", key, err, res)
				}
			})
			synctest.Wait() // runs join the queues in index order
		}
		wg.Wait()
		if violations > 0 {
			t.Errorf("%d times two runs of one session ran at once", violations)
		}
		if maxGlobal != 4 {
			t.Errorf("at most %d runs at once, want the main lane's cap of 4", maxGlobal)
		}
		if waits < 45 {
			t.Errorf("only %d lane_wait events for 50 runs on 4 slots", waits)
		}
		// Per session, runs start in arrival order.
		last := map[string]string{}
		for _, k := range order {
			s := strings.SplitN(k, "/", 2)[0]
			if k < last[s] {
				t.Errorf("run %s started after %s", k, last[s])
			}
			last[s] = k
		}
		if n := len(r.lanes.lanes); n != 1 {
			t.Errorf("%d lanes left, want only the global one", n)
		}
		if got := r.lanes.Running(LaneMain); got != 0 {
			t.Errorf("%d slots still held", got)
		}
	})
}

func TestQueuedRunCancelledLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	store := session.NewJSONLStore(dir)
	cwd := t.TempDir()
	hold := make(chan struct{})
	m := faux.New(faux.Say("first").WithHold(hold), faux.Say("never"))
	r := testRunner(nil)
	first := make(chan Result, 1)
	started := make(chan struct{})
	go func() {
		res, err := r.runParams(context.Background(), params{Prompt: "one", SessionKey: "k", Model: m,
			Store: store, Session: SessionSpec{Cwd: cwd, ID: ""}, OnEvent: func(ev Event) {
				if ev.Type == agent.EventAgentStart {
					close(started)
				}
			}})
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	res, err := r.runParams(ctx, params{Prompt: "two", SessionKey: "k", Model: m,
		Store: store, Session: SessionSpec{Cwd: cwd}, OnEvent: func(ev Event) {
			if ev.Type == EventLaneWait {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || res.Reason != ReasonAborted {
		t.Fatalf("queued run: %v %+v, want cancelled", err, res)
	}
	close(hold)
	fr := <-first
	if !fr.OK() {
		t.Fatalf("first run: %+v", fr)
	}
	if m.Calls() != 1 {
		t.Errorf("the cancelled run called the model")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files %v, want only the first run's", files)
	}
	data, _ := os.ReadFile(files[0])
	if strings.Contains(string(data), `"two"`) {
		t.Errorf("the cancelled run left its prompt in a transcript")
	}
	if len(r.lanes.lanes) != 1 {
		t.Errorf("lanes left behind: %v", r.lanes.lanes)
	}
}

func TestRegistrySteerAbortActive(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	m := faux.New(faux.Say("working").WithHold(hold))
	r := testRunner(nil)
	started := make(chan struct{})
	h, err := r.Start(context.Background(), Request{Prompt: "go", SessionKey: "abc", Model: m, OnEvent: func(ev Event) {
		if ev.Type == agent.EventAgentStart {
			close(started)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if got := r.Active(); len(got) != 1 || got[0] != h || h.Key() != "abc" {
		t.Fatalf("Active = %v", got)
	}
	if !h.Steer("also this") {
		t.Error("Steer of the active run failed")
	}
	h.Abort()
	res, _ := h.Wait()
	if res.Reason != ReasonAborted || !errors.Is(res.Err, ErrAborted) {
		t.Fatalf("aborted run: %+v", res)
	}
	if len(r.Active()) != 0 {
		t.Errorf("the run is still registered")
	}
	if h.Steer("late") || h.FollowUp("late") {
		t.Error("steering an ended run reported success")
	}
}

func TestRunPersistsAndResumes(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	cwd := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		m := faux.New(faux.Say("part").WithError(faux.Failure{Reason: llm.ReasonOverloaded, Status: 529}), faux.Say("first answer"), faux.Say("second answer"))
		r := testRunner(nil)
		res, err := r.runParams(t.Context(), params{Prompt: "hello", Model: m, Retry: noJitter(), Store: store, Session: SessionSpec{Cwd: cwd}})
		if err != nil || !res.OK() || res.SessionID == "" {
			t.Fatalf("first run: %v %+v", err, res)
		}
		res2, err := r.runParams(t.Context(), params{Prompt: "again", Model: m, Store: store, Session: SessionSpec{Cwd: cwd, Continue: true}})
		if err != nil || !res2.OK() || res2.SessionID != res.SessionID {
			t.Fatalf("continued run: %v %+v (first %s)", err, res2, res.SessionID)
		}
		tr, err := store.Load(t.Context(), res.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		_ = tr
		sess, err := store.Open(t.Context(), res.SessionID, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		var texts []string
		for _, msg := range sess.Context().Messages {
			texts = append(texts, string(msg.Role)+":"+msg.Text())
		}
		want := "user:hello assistant:first answer user:again assistant:second answer"
		if got := strings.Join(texts, " "); got != want {
			t.Errorf("context %q, want %q (the failed reply stays a dead branch)", got, want)
		}
		// The model saw the first exchange on resume.
		reqs := m.Requests()
		if n := len(reqs[len(reqs)-1].Messages); n != 3 {
			t.Errorf("the resumed call sent %d messages, want 3", n)
		}
	})
}

func TestSecondWriterFailsFast(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	cwd := t.TempDir()
	m := faux.New(faux.Say("one"))
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: m, Store: store, Session: SessionSpec{Cwd: cwd}})
	if err != nil {
		t.Fatal(err)
	}
	held, err := store.Open(t.Context(), res.SessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: faux.New(faux.Say("two")), Store: store, Session: SessionSpec{Cwd: cwd, ID: res.SessionID}})
	if !errors.Is(err, session.ErrLocked) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second writer: %v, want the lock message", err)
	}
}
