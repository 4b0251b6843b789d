package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// held is a reply kept open until release is closed.
func held(release chan struct{}, text string) faux.Step { return faux.Say(text).WithHold(release) }

// The same idempotency key twice starts one run.
func TestIdempotentStart(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("once"), faux.Say("twice")})
	sess := tsv.newSession()
	a, _ := tsv.startRun(sess.ID, "go", "same", "")
	b, code := tsv.startRun(sess.ID, "go", "same", "")
	if code != http.StatusAccepted || a.RunID != b.RunID {
		t.Fatalf("runs %s and %s (%d)", a.RunID, b.RunID, code)
	}
	tsv.events("/v1/runs/"+a.RunID+"/events", nil).rest(t)
	c, _ := tsv.startRun(sess.ID, "go", "same", "")
	if c.RunID != a.RunID || tsv.model.Calls() != 1 {
		t.Fatalf("after the run: %s, %d model calls", c.RunID, tsv.model.Calls())
	}
	var e wireError
	if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/runs", map[string]any{"input": "x"}, &e); code != http.StatusBadRequest || e.Error.Code != CodeInvalidRequest {
		t.Fatalf("no key: %d %+v", code, e)
	}
}

// onBusy: queue waits its turn (run_queued, then runs), reject is 409,
// interrupt aborts the active run and goes next, steer reaches the active
// run's model; beyond SessionQueue queued runs, 429.
func TestOnBusy(t *testing.T) {
	t.Run("queue", func(t *testing.T) {
		release := make(chan struct{})
		tsv := newTestServer(t, []faux.Step{held(release, "first"), faux.Say("second")})
		sess := tsv.newSession()
		st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
		a, _ := tsv.startRun(sess.ID, "one", "a", "")
		st.until(t, "message_update") // the model is streaming the held reply
		b, _ := tsv.startRun(sess.ID, "two", "b", OnBusyQueue)
		if b.Status != RunQueued || b.Position != 1 {
			t.Fatalf("queued: %+v", b)
		}
		q := st.until(t, EventRunQueued)
		if f := q[len(q)-1].fields(t); f["runId"] != b.RunID || f["position"] != 1.0 {
			t.Fatalf("run_queued: %v", f)
		}
		close(release)
		msgs := st.until(t, "run_end")
		msgs = append(msgs, st.until(t, "run_end")...)
		var ends []string
		for _, m := range msgs {
			if m.event == "run_end" {
				f := m.fields(t)
				ends = append(ends, f["runId"].(string)+":"+f["reason"].(string))
			}
		}
		if strings.Join(ends, ",") != a.RunID+":stop,"+b.RunID+":stop" {
			t.Fatalf("ends: %v", ends)
		}
	})
	t.Run("reject", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		tsv := newTestServer(t, []faux.Step{held(release, "first")})
		sess := tsv.newSession()
		a, _ := tsv.startRun(sess.ID, "one", "a", "")
		var e wireError
		code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/runs", map[string]any{"input": "two", "idempotencyKey": "b", "onBusy": "reject"}, &e)
		if code != http.StatusConflict || e.Error.Code != CodeSessionBusy || e.Error.Details["activeRunId"] != a.RunID {
			t.Fatalf("reject: %d %+v", code, e)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		tsv := newTestServer(t, []faux.Step{held(release, "first"), faux.Say("second")})
		sess := tsv.newSession()
		st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
		a, _ := tsv.startRun(sess.ID, "one", "a", "")
		st.until(t, "message_update") // the model is streaming the held reply
		b, _ := tsv.startRun(sess.ID, "two", "b", OnBusyInterrupt)
		msgs := st.until(t, "run_end")
		if f := msgs[len(msgs)-1].fields(t); f["runId"] != a.RunID || f["reason"] != "aborted" {
			t.Fatalf("first run_end: %v", f)
		}
		msgs = st.until(t, "run_end")
		if f := msgs[len(msgs)-1].fields(t); f["runId"] != b.RunID || f["reason"] != "stop" {
			t.Fatalf("second run_end: %v", f)
		}
	})
	t.Run("steer", func(t *testing.T) {
		release := make(chan struct{})
		tsv := newTestServer(t, []faux.Step{held(release, "first"), faux.Say("steered")})
		sess := tsv.newSession()
		st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
		a, _ := tsv.startRun(sess.ID, "one", "a", "")
		st.until(t, "message_update") // the model is streaming the held reply
		b, _ := tsv.startRun(sess.ID, "also this", "b", OnBusySteer)
		if b.RunID != a.RunID || b.Delivered != "steer" {
			t.Fatalf("steer: %+v", b)
		}
		close(release)
		st.until(t, "run_end")
		reqs := tsv.model.Requests()
		if len(reqs) != 2 || !hasUserText(reqs[1].Messages, "also this") {
			t.Fatalf("the steered text did not reach the model: %d requests", len(reqs))
		}
		if again, _ := tsv.startRun(sess.ID, "also this", "b", OnBusySteer); again.RunID != a.RunID {
			t.Fatalf("same key after a steer: %+v", again)
		}
	})
	t.Run("steer behind a queue", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		tsv := newTestServer(t, []faux.Step{held(release, "first"), faux.Say("2"), faux.Say("3")})
		sess := tsv.newSession()
		st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
		tsv.startRun(sess.ID, "one", "a", "")
		st.until(t, "message_update")
		tsv.startRun(sess.ID, "two", "b", OnBusyQueue)
		c, _ := tsv.startRun(sess.ID, "three", "c", OnBusySteer)
		if c.Delivered != "queued" || c.Status != RunQueued || c.Position != 2 {
			t.Fatalf("a steer while a run waits must wait too (order): %+v", c)
		}
		if again, _ := tsv.startRun(sess.ID, "three", "c", OnBusySteer); again.RunID != c.RunID || again.Delivered != "queued" {
			t.Fatalf("same key: %+v", again)
		}
	})
	t.Run("queue_full", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		tsv := newTestServer(t, []faux.Step{held(release, "first"), faux.Say("2"), faux.Say("3")},
			func(c *Config, _ *testServer) { c.SessionQueue = 1 })
		sess := tsv.newSession()
		tsv.startRun(sess.ID, "one", "a", "")
		if _, code := tsv.startRun(sess.ID, "two", "b", ""); code != http.StatusAccepted {
			t.Fatalf("second: %d", code)
		}
		resp := tsv.request("POST", "/v1/sessions/"+sess.ID+"/runs", map[string]any{"input": "three", "idempotencyKey": "c"}, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("third: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})
}

func hasUserText(msgs []llm.Message, text string) bool {
	for _, m := range msgs {
		if m.Role == llm.RoleUser && strings.Contains(m.Text(), text) {
			return true
		}
	}
	return false
}

// Steer and follow-up on a run: delivered while it runs, 409
// run_not_active once it ended.
func TestSteerAndFollowUp(t *testing.T) {
	release := make(chan struct{})
	tsv := newTestServer(t, []faux.Step{held(release, "first"), faux.Say("steered"), faux.Say("followed")})
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	a, _ := tsv.startRun(sess.ID, "one", "a", "")
	st.until(t, "message_update") // the model is streaming the held reply
	var inj Injected
	if code := tsv.do("POST", "/v1/runs/"+a.RunID+"/steer", Inject{Text: "steer me"}, &inj); code != 200 || inj.Delivered != "steer" {
		t.Fatalf("steer: %d %+v", code, inj)
	}
	if code := tsv.do("POST", "/v1/runs/"+a.RunID+"/follow-up", Inject{Text: "then this"}, &inj); code != 200 || inj.Delivered != "queued" {
		t.Fatalf("follow-up: %d %+v", code, inj)
	}
	close(release)
	st.until(t, "run_end")
	if n := tsv.model.Calls(); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	var e wireError
	if code := tsv.do("POST", "/v1/runs/"+a.RunID+"/steer", Inject{Text: "late"}, &e); code != http.StatusConflict || e.Error.Code != CodeRunNotActive {
		t.Fatalf("late steer: %d %+v", code, e)
	}
}

// Deleting a session with a running run aborts the run first, then the
// session is gone.
func TestDeleteRunningSession(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tsv := newTestServer(t, []faux.Step{faux.Say("first"), held(release, "second")})
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "one", "a")
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	b, _ := tsv.startRun(sess.ID, "two", "b", "")
	st.until(t, "message_update") // the model is streaming the held reply
	if code := tsv.do("DELETE", "/v1/sessions/"+sess.ID, nil, nil); code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	// The run was aborted before the delete answered; the stream says so,
	// and the run is forgotten with its session.
	var end map[string]any
	for _, m := range st.rest(t) {
		if m.event == "run_end" {
			end = m.fields(t)
		}
	}
	if end["runId"] != b.RunID || end["reason"] != "aborted" {
		t.Fatalf("run_end after delete: %v", end)
	}
	if code := tsv.do("GET", "/v1/runs/"+b.RunID, nil, nil); code != http.StatusNotFound {
		t.Fatalf("run after delete: %d", code)
	}
	if code := tsv.do("GET", "/v1/sessions/"+sess.ID, nil, nil); code != http.StatusNotFound {
		t.Fatalf("get after delete: %d", code)
	}
	if _, err := tsv.store.Load(context.Background(), sess.ID); err == nil {
		t.Fatal("the transcript is still there")
	}
}

// A run stream opened after the run ended replays it and ends; one
// opened after its last event ends at once.
func TestRunStreamOfEndedRun(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")})
	sess := tsv.newSession()
	info, all := tsv.runToIdle(sess.ID, "go", "a")
	got := tsv.events("/v1/runs/"+info.RunID+"/events", nil).rest(t)
	if len(got) == 0 || got[len(got)-1].event != "run_end" {
		t.Fatalf("replay: %v", types(got))
	}
	last := got[len(got)-1].id
	if rest := tsv.events("/v1/runs/"+info.RunID+"/events?after="+last, nil).rest(t); len(rest) != 0 {
		t.Fatalf("after the end: %v", types(rest))
	}
	_ = all
}

// A session keeps its last keptRuns ended runs; older ones are
// forgotten (404), with their idempotency keys.
func TestEndedRunsAreForgotten(t *testing.T) {
	defer func(n int) { keptRuns = n }(keptRuns)
	keptRuns = 3
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")})
	tsv.model.Repeat = true
	sess := tsv.newSession()
	var first RunInfo
	for i := 0; i <= keptRuns; i++ {
		info, e := tsv.s.StartRun(context.Background(), sess.ID, StartRunRequest{Input: []byte(`"go"`), IdempotencyKey: "k" + strconv.Itoa(i)})
		if e != nil {
			t.Fatal(e)
		}
		tsv.s.mu.Lock()
		rs := tsv.s.runs[info.RunID]
		tsv.s.mu.Unlock()
		<-rs.finished
		if i == 0 {
			first = info
		}
	}
	if code := tsv.do("GET", "/v1/runs/"+first.RunID, nil, nil); code != http.StatusNotFound {
		t.Fatalf("the oldest run: %d", code)
	}
	tsv.s.mu.Lock()
	n, idem := len(tsv.s.runs), len(tsv.s.sessions[sess.ID].idem)
	tsv.s.mu.Unlock()
	if n != keptRuns || idem != keptRuns {
		t.Fatalf("%d runs, %d keys kept", n, idem)
	}
}

// While a run compacts it cannot be steered: a steer (POST /steer, or a
// start with onBusy steer) is queued as the session's next run instead,
// and runs after it.
func TestSteerWhileCompacting(t *testing.T) {
	long := strings.Repeat("a long answer that fills the window. ", 200) // ≈1,850 tokens
	release := make(chan struct{})
	steps := []faux.Step{faux.Say(long), faux.Say(long), faux.Say(long), faux.Say(long), faux.Say(long),
		faux.Say("SUMMARY").WithHold(release), // the precheck's summary of the sixth run
		faux.Say("sixth"), faux.Say("from the steer"), faux.Say("from the start")}
	tsv := newTestServer(t, steps, func(_ *Config, tsv *testServer) {
		tsv.runnerConfig.Compaction = &runner.CompactionSpec{Summarizer: &compact.Summarizer{}}
	})
	tsv.model.Info.ContextWindow = 16000 // a prompt budget of 8,000 tokens
	sess := tsv.newSession()
	for i := range 5 {
		tsv.runToIdle(sess.ID, "more", "k"+strconv.Itoa(i))
	}
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	sixth, _ := tsv.startRun(sess.ID, "more", "k5", "")
	st.until(t, "auto_compaction_start")

	var inj Injected
	if code := tsv.do("POST", "/v1/runs/"+sixth.RunID+"/steer", Inject{Text: "steer me"}, &inj); code != 200 || inj.Delivered != "queued" || inj.RunID == "" {
		t.Fatalf("steer while compacting: %d %+v", code, inj)
	}
	started, _ := tsv.startRun(sess.ID, "also me", "k6", OnBusySteer)
	if started.Delivered != "queued" || started.RunID == sixth.RunID {
		t.Fatalf("start with onBusy steer while compacting: %+v", started)
	}
	close(release)
	var ends []string
	for len(ends) < 3 {
		for _, m := range st.until(t, "run_end") {
			if m.event == "run_end" {
				ends = append(ends, m.fields(t)["runId"].(string))
			}
		}
	}
	if want := []string{sixth.RunID, inj.RunID, started.RunID}; !slices.Equal(ends, want) {
		t.Fatalf("runs ended %v, want %v", ends, want)
	}
	reqs := tsv.model.Requests()
	if !hasUserText(reqs[len(reqs)-2].Messages, "steer me") || !hasUserText(reqs[len(reqs)-1].Messages, "also me") {
		t.Fatal("the queued texts did not reach the model in order")
	}
}

// The same idempotency key with a different body is a client bug (or two
// clients sharing a key): it is refused with 422 idempotency_key_reused
// naming the run the key started, instead of answering as if the second
// input had been accepted while it was silently dropped. The same body
// again, even formatted differently, is still the retry it was.
func TestIdempotencyKeyWithAnotherBody(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("once"), faux.Say("twice")})
	sess := tsv.newSession()
	path := "/v1/sessions/" + sess.ID + "/runs"
	a, _ := tsv.startRun(sess.ID, "delete the staging database", "k1", "")
	tsv.events("/v1/runs/"+a.RunID+"/events", nil).rest(t)
	for name, body := range map[string]map[string]any{
		"input":  {"input": "keep the staging database", "idempotencyKey": "k1"},
		"model":  {"input": "delete the staging database", "idempotencyKey": "k1", "model": "faux/other"},
		"onBusy": {"input": "delete the staging database", "idempotencyKey": "k1", "onBusy": OnBusyReject},
	} {
		var e wireError
		code := tsv.do("POST", path, body, &e)
		if code != http.StatusUnprocessableEntity || e.Error.Code != CodeIdempotencyKeyReused || e.Error.Details["runId"] != a.RunID {
			t.Errorf("%s differs: %d %+v", name, code, e)
		}
	}
	var again RunInfo
	raw := `{"idempotencyKey":"k1", "input" :   "delete the staging database"}`
	resp := tsv.request("POST", path, json.RawMessage(raw), nil)
	_ = jsonDecode(resp.Body, &again)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || again.RunID != a.RunID {
		t.Fatalf("the same body again: %d %+v", resp.StatusCode, again)
	}
	if tsv.model.Calls() != 1 {
		t.Fatalf("%d model calls", tsv.model.Calls())
	}
}

// DELETE hands OnDelete the session's transcript as it was before it was
// deleted (what a harness binding in it names can then be deleted too).
func TestDeleteSessionOnDelete(t *testing.T) {
	var got []*session.Transcript
	var logged bytes.Buffer
	tsv := newTestServer(t, []faux.Step{faux.Say("first")}, func(c *Config, _ *testServer) {
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		c.OnDelete = func(_ context.Context, tr *session.Transcript) error {
			got = append(got, tr)
			return errors.New("the engine is not reachable") // logged; the delete stands
		}
	})
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "one", "a")
	if code := tsv.do("DELETE", "/v1/sessions/"+sess.ID, nil, nil); code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	if len(got) != 1 || got[0].Header.ID != sess.ID || len(got[0].Entries) == 0 {
		t.Fatalf("OnDelete got %d transcripts %+v", len(got), got)
	}
	if _, err := tsv.store.Load(context.Background(), sess.ID); err == nil {
		t.Fatal("the transcript is still there")
	}
	// The failure went to Config.Logger, naming the session and the error.
	if l := logged.String(); !strings.Contains(l, sess.ID) || !strings.Contains(l, "the engine is not reachable") {
		t.Fatalf("Config.Logger got %q", l)
	}
}

// checkInjectFull checks that a steer and a follow-up to run runID on tsv
// get 429 queue_full naming the bound, retryable with Retry-After.
func checkInjectFull(t *testing.T, tsv *testServer, runID string, bound int) {
	t.Helper()
	for _, path := range []string{"steer", "follow-up"} {
		var e wireError
		resp := tsv.request("POST", "/v1/runs/"+runID+"/"+path, Inject{Text: "one too many"}, nil)
		code := resp.StatusCode
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if code != http.StatusTooManyRequests || e.Error.Code != CodeQueueFull || !e.Error.Retryable ||
			!strings.Contains(e.Error.Message, strconv.Itoa(bound)+" steer and follow-up messages") ||
			!strings.Contains(e.Error.Message, "wait for the run") || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s beyond the bound: %d %+v (Retry-After %q)", path, code, e, resp.Header.Get("Retry-After"))
		}
	}
}

// Steer and follow-up messages a run has not read yet are bounded
// (Config.InjectQueue): beyond, 429 queue_full says to wait for the run;
// once the run has read them (its next turn), there is room again.
func TestInjectQueueBound(t *testing.T) {
	first, second := make(chan struct{}), make(chan struct{})
	tsv := newTestServer(t, []faux.Step{held(first, "first"), held(second, "second"), faux.Say("third")},
		func(c *Config, _ *testServer) { c.InjectQueue = 3 })
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	a, _ := tsv.startRun(sess.ID, "one", "a", "")
	st.until(t, "message_update") // the held first reply streams
	for i, path := range []string{"steer", "follow-up", "steer"} {
		var inj Injected
		if code := tsv.do("POST", "/v1/runs/"+a.RunID+"/"+path, Inject{Text: "m" + strconv.Itoa(i)}, &inj); code != http.StatusOK {
			t.Fatalf("%s %d: %d %+v", path, i, code, inj)
		}
	}
	checkInjectFull(t, tsv, a.RunID, 3)
	// The same bound holds for a run start that steers.
	body := map[string]any{"input": "steer by start", "idempotencyKey": "s", "onBusy": "steer"}
	var e wireError
	if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/runs", body, &e); code != http.StatusTooManyRequests || e.Error.Code != CodeQueueFull {
		t.Fatalf("onBusy steer beyond the bound: %d %+v", code, e)
	}
	close(first)
	// The run reads the two steered messages at its next turn (the
	// follow-up waits for its stop): one slot is still taken.
	for n := 0; n < 2; {
		ms := st.until(t, "message_start")
		if m := ms[len(ms)-1].fields(t); m["message"].(map[string]any)["role"] == "user" {
			n++
		}
	}
	st.until(t, "message_update") // the held second reply streams
	var inj Injected
	for i := range 2 {
		if code := tsv.do("POST", "/v1/runs/"+a.RunID+"/steer", Inject{Text: "again" + strconv.Itoa(i)}, &inj); code != http.StatusOK {
			t.Fatalf("steer after the run read the first ones: %d %+v", code, inj)
		}
	}
	if code := tsv.do("POST", "/v1/runs/"+a.RunID+"/steer", Inject{Text: "full again"}, &e); code != http.StatusTooManyRequests {
		t.Fatalf("steer beyond the bound again: %d %+v", code, e)
	}
	close(second)
	st.until(t, "run_end")
}
