package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// script is a run with thinking, text, a tool call and a final reply.
func script() []faux.Step {
	return []faux.Step{
		faux.Reply(faux.Thinking("plan <it>"), faux.Text("Calling echo & co."), faux.ToolCall("echo", map[string]any{"text": "hi"})),
		faux.Say("All done: <b>bold</b>"),
	}
}

// envelope are the fields SSE and --json may differ in: the numbering and
// naming of the run and session, and the path of the session's file.
var envelope = []string{"seq", "runId", "sessionId", "sessionPath"}

func stripEnvelope(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, data)
	}
	for _, k := range envelope {
		delete(m, k)
	}
	return m
}

// The SSE stream of a run carries, event by event, what agentloop run
// --json prints for the same run (its encoder: Event.MarshalJSON through a
// json.Encoder without HTML escaping), bar the envelope; the SSE id is the
// data's seq, and the seqs of a session's stream go up by one.
func TestSSEMatchesRunJSON(t *testing.T) {
	// The reference: the same script run by a Runner directly, printed the
	// way the CLI's --json printer does.
	ref := faux.New(script()...)
	ref.Now = fixedNow
	store := session.NewJSONLStore(t.TempDir())
	rn, err := runner.New(runner.Config{Store: store, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	reg, _ := tool.NewRegistry(echoTool())
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	cwd := t.TempDir()
	_, err = rn.Run(context.Background(), runner.Request{Prompt: "go", Model: ref, Info: ref.ModelInfo(), Tools: reg,
		Session: runner.SessionSpec{Cwd: cwd}, OnEvent: func(ev runner.Event) { enc.Encode(ev) }})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(buf.String()), "\n")

	tsv := newTestServer(t, script())
	tsv.cwd = cwd
	sess := tsv.newSession()
	stream := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	info, _ := tsv.startRun(sess.ID, "go", "k", "")
	all := stream.until(t, "run_end")

	var got []sseMsg
	last := int64(0)
	for _, m := range all {
		f := m.fields(t)
		if m.seq() != int64(f["seq"].(float64)) {
			t.Fatalf("id %s but data seq %v", m.id, f["seq"])
		}
		if last != 0 && m.seq() != last+1 {
			t.Fatalf("seq %d after %d", m.seq(), last)
		}
		last = m.seq()
		if f["sessionId"] != sess.ID {
			t.Fatalf("%s: sessionId %v", m.event, f["sessionId"])
		}
		switch m.event {
		case EventSessionStatus, EventRunQueued:
			continue // the gateway's own
		}
		if f["runId"] != info.RunID {
			t.Fatalf("%s: runId %v, want %s", m.event, f["runId"], info.RunID)
		}
		got = append(got, m)
	}
	if len(got) != len(want) {
		t.Fatalf("%d runner events over SSE, %d in --json:\nsse:  %v\njson: %s", len(got), len(want), types(got), want)
	}
	for i := range want {
		w, g := stripEnvelope(t, []byte(want[i])), stripEnvelope(t, []byte(got[i].data))
		if got[i].event != w["type"] {
			t.Fatalf("event %d: SSE event %q, data type %v", i, got[i].event, w["type"])
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("event %d (%s) differs beyond the envelope:\n--json: %s\nSSE:    %s", i, got[i].event, want[i], got[i].data)
		}
	}
	if !strings.Contains(buf.String(), "<b>bold</b>") {
		t.Fatal("the reference escaped HTML")
	}
}

// A client cut after seq k that reconnects with Last-Event-ID: k gets
// every later event exactly once; ?after= does the same.
func TestResumeAfterCut(t *testing.T) {
	hold := make(chan struct{})
	steps := script()
	steps[1] = steps[1].WithHold(hold)
	tsv := newTestServer(t, steps)
	sess := tsv.newSession()
	full := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	first := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	tsv.startRun(sess.ID, "go", "k", "")
	head := first.until(t, "tool_execution_end")
	first.close()
	k := head[len(head)-1].seq()

	close(hold)
	want := full.until(t, "run_end")
	for _, how := range []string{"header", "query"} {
		var st *sseStream
		if how == "header" {
			st = tsv.events("/v1/sessions/"+sess.ID+"/events", http.Header{"Last-Event-ID": {strconv.FormatInt(k, 10)}})
		} else {
			st = tsv.events("/v1/sessions/"+sess.ID+"/events?after="+strconv.FormatInt(k, 10), nil)
		}
		got := st.until(t, "run_end")
		var wantTail []sseMsg
		for _, m := range want {
			if m.seq() > k {
				wantTail = append(wantTail, m)
			}
		}
		if len(got) != len(wantTail) {
			t.Fatalf("%s: resumed with %d events after %d, want %d: %v", how, len(got), k, len(wantTail), types(got))
		}
		for i := range got {
			if got[i] != wantTail[i] {
				t.Fatalf("%s: event %d: %+v, want %+v", how, i, got[i], wantTail[i])
			}
		}
	}
}

// An id older than the ring holds gets one resync event, with the
// ring's bounds, then live events; so does one newer than the head.
func TestResyncForOldID(t *testing.T) {
	tsv := newTestServer(t, script(), func(c *Config, _ *testServer) { c.Ring.Events = 5 })
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "go", "k")
	var v Session
	tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v)
	if v.HeadSeq < 10 {
		t.Fatalf("headSeq %d", v.HeadSeq)
	}
	for _, after := range []int64{1, v.HeadSeq + 5} {
		st := tsv.events("/v1/sessions/"+sess.ID+"/events?after="+strconv.FormatInt(after, 10), nil)
		m := <-st.msgs
		f := m.fields(t)
		if m.event != EventResync || int64(f["headSeq"].(float64)) != v.HeadSeq || int64(f["oldestSeq"].(float64)) != v.HeadSeq-4 {
			t.Fatalf("after=%d: first message %+v", after, m)
		}
		st.close()
	}
	// Within the ring: a replay, no resync.
	st := tsv.events("/v1/sessions/"+sess.ID+"/events?after="+strconv.FormatInt(v.HeadSeq-3, 10), nil)
	for i := int64(1); i <= 3; i++ {
		m := <-st.msgs
		if m.event == EventResync || m.seq() != v.HeadSeq-3+i {
			t.Fatalf("replay %d: %+v", i, m)
		}
	}
}

// manualClock is the real clock whose AfterFunc waits until fire.
type manualClock struct {
	clock.Real
	mu  sync.Mutex
	fns []func()
}

func (c *manualClock) AfterFunc(_ time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := len(c.fns)
	c.fns = append(c.fns, f)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := c.fns[i] != nil
		c.fns[i] = nil
		return stopped
	}
}

// fire runs the timers not stopped.
func (c *manualClock) fire() {
	c.mu.Lock()
	fns := slices.Clone(c.fns)
	clear(c.fns)
	c.mu.Unlock()
	for _, f := range fns {
		if f != nil {
			f()
		}
	}
}

// An idle session's ring is dropped Ring.Keep after its last run: a
// client resuming then gets a resync. A run that starts in time keeps it.
func TestRingExpiresWhenIdle(t *testing.T) {
	clk := &manualClock{}
	tsv := newTestServer(t, []faux.Step{faux.Say("one"), faux.Say("two")}, func(c *Config, _ *testServer) { c.Clock = clk })
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "go", "a")
	tsv.runToIdle(sess.ID, "go", "b") // its start stopped the first timer
	clk.fire()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events?after=1", nil)
	if m := <-st.msgs; m.event != EventResync {
		t.Fatalf("after the ring expired: %+v", m)
	}
}
