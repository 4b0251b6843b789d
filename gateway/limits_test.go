package gateway

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm/faux"
)

// chatty is a run with many events: a long text streamed in many deltas.
func chatty() []faux.Step {
	return []faux.Step{faux.Say(strings.Repeat("all work and no play makes a long stream. ", 1000))}
}

// A client that never reads is cut once its queue is full, and what was
// queued for it is freed; the run is not slowed; the stream it got, resumed
// by its last id, has no gap and no repeat.
func TestSlowConsumerIsCut(t *testing.T) {
	tsv := newTestServer(t, chatty(), func(c *Config, tsv *testServer) {
		c.ClientQueue = QueueLimit{Frames: 64, Bytes: 1 << 20}
		smallWriteBuffers(tsv)
	})
	sess := tsv.newSession()

	conn := nonReadingStream(t, tsv, sess.ID)
	defer conn.Close()

	info, _ := tsv.startRun(sess.ID, "go", "k", "")
	// The run is not held back by the client: it ends while the client
	// has read nothing.
	waitFor(t, "the run's end", func() bool {
		var r Run
		tsv.do("GET", "/v1/runs/"+info.RunID, nil, &r)
		return r.EndedAt != time.Time{}
	})
	// Not a timing: the cut happened while the run was sending; the wait
	// covers the handler's goroutine ending and freeing the queue.
	waitFor(t, "the cut", func() bool { return tsv.subscribers(sess.ID) == 0 && tsv.s.queuedBytes.Load() == 0 })
	var v Session
	tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v)
	if v.HeadSeq < 500 {
		t.Fatalf("the run sent only %d events", v.HeadSeq)
	}

	// What the client got: a prefix of the stream, then the end.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := bufio.NewReader(resp.Body)
	lastID := int64(0)
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			break
		}
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "id: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			if lastID != 0 && n != lastID+1 {
				t.Fatalf("id %d after %d", n, lastID)
			}
			lastID = n
		}
	}
	if lastID == 0 || lastID >= v.HeadSeq-64 {
		t.Fatalf("the slow client saw ids up to %d of %d: it was not cut", lastID, v.HeadSeq)
	}
	// Resuming from there gives the rest, from lastID+1, exactly once.
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", http.Header{"Last-Event-ID": {strconv.FormatInt(lastID, 10)}})
	got := st.until(t, "run_end")
	for i, m := range got {
		if m.seq() != lastID+1+int64(i) {
			t.Fatalf("resumed event %d has seq %d, want %d", i, m.seq(), lastID+1+int64(i))
		}
	}
}

// subscribers counts the live subscriptions of a session.
func (tsv *testServer) subscribers(id string) int {
	tsv.s.mu.Lock()
	ss := tsv.s.sessions[id]
	tsv.s.mu.Unlock()
	if ss == nil {
		return 0
	}
	ss.emu.Lock()
	defer ss.emu.Unlock()
	return len(ss.subs)
}

// waitFor polls cond (state that another goroutine changes) until it
// holds; it fails after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Beyond MaxInflight requests, 503 overloaded with Retry-After; a body over
// MaxBody, 413.
func TestInflightAndBodyLimits(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")}, func(c *Config, _ *testServer) {
		c.MaxInflight = 1
		c.MaxBody = 4096
		c.Compact = func(ctx context.Context, rs RunSettings, instructions string) (string, error) {
			close(entered)
			<-release
			return "compacted", nil
		}
	})
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "go", "k")
	done := make(chan int)
	go func() {
		resp := tsv.request("POST", "/v1/sessions/"+sess.ID+"/command", CommandRequest{Name: "compact"}, nil)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-entered
	resp := tsv.request("GET", "/v1/sessions/"+sess.ID, nil, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Event streams do not count against the cap.
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	st.close()
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("compact: %d", code)
	}
	var e wireError
	big := map[string]any{"input": strings.Repeat("x", 5000), "idempotencyKey": "big"}
	if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/runs", big, &e); code != http.StatusRequestEntityTooLarge || e.Error.Code != CodeTooLarge {
		t.Fatalf("big body: %d %+v", code, e)
	}
}

// Shutdown lets a run finish within its deadline, aborts one that does
// not, ends the event streams, and refuses new runs; goleak (TestMain)
// checks that nothing it started is left.
func TestShutdown(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tsv := newTestServer(t, []faux.Step{faux.Say("quick"), faux.Say("slow").WithHold(release)})
	a := tsv.newSession()
	tsv.runToIdle(a.ID, "go", "k")
	b := tsv.newSession()
	st := tsv.events("/v1/sessions/"+b.ID+"/events", nil)
	run, _ := tsv.startRun(b.ID, "go", "k", "")
	st.until(t, "message_update")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := tsv.s.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown: %v, want the deadline (a run had to be aborted)", err)
	}
	rest := st.rest(t) // the stream ends
	if len(rest) == 0 || rest[len(rest)-1].event != "run_end" && !hasEvent(rest, "run_end") {
		t.Fatalf("after Shutdown the stream had %v", types(rest))
	}
	var r Run
	tsv.do("GET", "/v1/runs/"+run.RunID, nil, &r)
	if r.Status != RunAborted {
		t.Fatalf("run: %+v", r)
	}
	var e wireError
	if _, code := tsv.startRun(a.ID, "more", "k2", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("start after Shutdown: %d %+v", code, e)
	}
	if code := tsv.do("GET", "/v1/readyz", nil, nil); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz after Shutdown: %d", code)
	}
}

func hasEvent(ms []sseMsg, typ string) bool {
	for _, m := range ms {
		if m.event == typ {
			return true
		}
	}
	return false
}

// The seq of a session continues after a restart: a new Server on the
// same store and state directory numbers on from the last one's head.
func TestSeqContinuesAfterRestart(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("one"), faux.Say("two")})
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "go", "k")
	var v Session
	tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v)
	if v.HeadSeq == 0 {
		t.Fatal("no events")
	}
	if err := tsv.s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2, err := New(tsv.s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tsv.ts.Close()
	// The cleanup shuts these down.
	tsv.ts = httptest.NewServer(s2.Handler())
	tsv.s = s2
	var v2 Session
	tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v2)
	if v2.HeadSeq != v.HeadSeq {
		t.Fatalf("headSeq after restart %d, before %d", v2.HeadSeq, v.HeadSeq)
	}
	_, msgs := tsv.runToIdle(sess.ID, "again", "k2")
	if msgs[0].seq() != v.HeadSeq+1 {
		t.Fatalf("first seq after restart %d, want %d", msgs[0].seq(), v.HeadSeq+1)
	}
}

// A server that ends without Shutdown (a crash) while a session emits: the
// next one numbers above every seq the first may have sent.
func TestSeqAfterCrash(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tsv := newTestServer(t, []faux.Step{held(release, "held")})
	sess := tsv.newSession()
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	tsv.startRun(sess.ID, "go", "k", "")
	seen := st.until(t, "message_update")
	k := seen[len(seen)-1].seq()

	// A second server on the same state, as after a crash of the first.
	s2, err := New(tsv.s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown(context.Background())
	v, e := s2.GetSession(context.Background(), sess.ID)
	if e != nil {
		t.Fatal(e)
	}
	if v.HeadSeq < k {
		t.Fatalf("after a crash the head is %d, but seq %d was sent", v.HeadSeq, k)
	}
}
