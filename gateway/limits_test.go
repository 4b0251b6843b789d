package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

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
	if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/runs", big, &e); code != http.StatusRequestEntityTooLarge || e.Error.Code != CodeTooLarge ||
		!strings.Contains(e.Error.Message, "limit of 4 KiB") || e.Error.Details["limitBytes"] != float64(4096) {
		t.Fatalf("big body: %d %+v", code, e)
	}

	// A body declared over the limit is answered at once, before the
	// client has sent it (a client that trickles it holds nothing).
	conn, err := net.Dial("tcp", tsv.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/sessions/%s/runs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"input\":\"",
		sess.ID, tsv.ts.Listener.Addr(), 1<<30)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a declared 1 GiB body while it is not sent: %v", err)
	}
	defer resp.Body.Close()
	e = wireError{}
	if err := jsonDecode(resp.Body, &e); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Code != CodeTooLarge ||
		!strings.Contains(e.Error.Message, "limit of 4 KiB") {
		t.Fatalf("declared 1 GiB body: %d %+v %v", resp.StatusCode, e, err)
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

// A seq file a crash left torn, zeroed or garbled does not stop the next
// server nor send its numbering back: the damage is logged, the session
// resumes above every seq its transcript may have been sent as, and the
// file is whole again after the next run.
func TestSeqFileDamaged(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"empty", ""},
		{"torn", "R 1"},
		{"zeroed", "\x00\x00\x00\x00\x00\x00"},
		{"garbage", "seq?\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			tsv := newTestServer(t, []faux.Step{faux.Say(strings.Repeat("many deltas ", 50)), faux.Say("two")},
				func(c *Config, _ *testServer) { c.Logger = slog.New(slog.NewTextHandler(&logged, nil)) })
			sess := tsv.newSession()
			_, msgs := tsv.runToIdle(sess.ID, "go", "k")
			head := msgs[len(msgs)-1].seq()
			if err := tsv.s.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(tsv.s.cfg.StateDir, sess.ID+".seq")
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s2, err := New(tsv.s.cfg)
			if err != nil {
				t.Fatal(err)
			}
			tsv.ts.Close()
			tsv.ts = httptest.NewServer(s2.Handler()) // the cleanup shuts these down
			tsv.s = s2
			var v Session
			if code := tsv.do("GET", "/v1/sessions/"+sess.ID, nil, &v); code != http.StatusOK {
				t.Fatalf("get after the damage: %d", code)
			}
			if v.HeadSeq <= head {
				t.Fatalf("headSeq after a damaged seq file %d, but seq %d was sent", v.HeadSeq, head)
			}
			if l := logged.String(); !strings.Contains(l, "damaged") || !strings.Contains(l, p) {
				t.Fatalf("the damage was not logged with the file: %q", l)
			}
			_, more := tsv.runToIdle(sess.ID, "again", "k2")
			if more[0].seq() != v.HeadSeq+1 {
				t.Fatalf("first seq after the damage %d, want %d", more[0].seq(), v.HeadSeq+1)
			}
			// (The file is written just after the idle status goes out.)
			waitFor(t, "the seq file rewritten whole", func() bool {
				b, err := os.ReadFile(p)
				n, ok := parseSeq(b)
				return err == nil && ok && n == more[len(more)-1].seq()
			})
		})
	}
}

// A client that trickles a request body is answered 408 after
// BodyTimeout and its connection closed; the deadline does not reach an
// event stream, nor a request that takes longer than it once its body
// has arrived (the server's background read would otherwise cancel it).
func TestBodyTimeout(t *testing.T) {
	const bodyTimeout = 300 * time.Millisecond
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")}, func(c *Config, _ *testServer) {
		c.BodyTimeout = bodyTimeout
		c.Heartbeat = 50 * time.Millisecond
		c.Compact = func(ctx context.Context, rs RunSettings, instructions string) (string, error) {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(3 * bodyTimeout):
				return "compacted", nil
			}
		}
	})
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "go", "k")
	rpc, _ := tsv.dialWS("", nil) // a WebSocket opened before

	conn, err := net.Dial("tcp", tsv.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"cwd\":", tsv.ts.Listener.Addr())
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	var e wireError
	if err := jsonDecode(resp.Body, &e); err != nil || resp.StatusCode != http.StatusRequestTimeout || e.Error.Code != CodeRequestTimeout ||
		!strings.Contains(e.Error.Message, "300ms") {
		t.Fatalf("trickled body: %d %+v %v", resp.StatusCode, e, err)
	}
	resp.Body.Close()
	if _, err := rd.ReadByte(); err == nil {
		t.Fatal("the connection of a trickled body stays open")
	}

	// An event stream lives on past the body timeout: its heartbeats keep
	// coming.
	st := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	opened := time.Now()
	for time.Since(opened) < 3*bodyTimeout {
		select {
		case <-st.comments:
		case err := <-st.errc:
			t.Fatalf("the event stream ended after %v: %v", time.Since(opened), err)
		case <-time.After(5 * time.Second):
			t.Fatal("no heartbeat")
		}
	}

	// So does the WebSocket, opened longer ago than the body timeout.
	var got Session
	if rpc.result("session/get", map[string]any{"sessionId": sess.ID}, &got); got.ID != sess.ID {
		t.Fatalf("session/get over the WebSocket: %+v", got)
	}

	// A request whose work outlasts the body timeout is not cancelled.
	var out CommandResult
	if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/command", CommandRequest{Name: "compact"}, &out); code != http.StatusOK || out.Text != "compacted" {
		t.Fatalf("compact outlasting the body timeout: %d %+v", code, out)
	}
}

// The event streams and WebSockets open at once are bounded
// (MaxStreams): beyond, 503 overloaded with Retry-After; a closed one
// frees its place.
func TestMaxStreams(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("hi")}, func(c *Config, _ *testServer) { c.MaxStreams = 2 })
	sess := tsv.newSession()
	a := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	_, ws := tsv.dialWS("", nil)
	for _, path := range []string{"/v1/sessions/" + sess.ID + "/events", "/v1/ws"} {
		resp := tsv.request("GET", path, nil, nil)
		var e wireError
		jsonDecode(resp.Body, &e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || e.Error.Code != CodeOverloaded || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(e.Error.Message, "2 event streams") {
			t.Fatalf("GET %s beyond MaxStreams: %d %+v", path, resp.StatusCode, e)
		}
	}
	a.close()
	ws.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the streams' places freed", func() bool { return tsv.s.openStreams.Load() == 0 })
	b := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	b.close()
}
