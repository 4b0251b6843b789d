package gateway

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"testing"
)

// A client that stops reading does not hold back another client of the
// same session: its handler may block in a write for as long as it likes
// (here its queue is large enough that it is never cut), the run and the
// other stream go on. The fan-out holds no lock while it writes to a
// client, and offering an event to a queue never waits.
func TestBlockedClientDoesNotDelayAnother(t *testing.T) {
	tsv := newTestServer(t, chatty(), func(c *Config, tsv *testServer) {
		c.ClientQueue = QueueLimit{Frames: 1 << 20, Bytes: 1 << 30}
		smallWriteBuffers(tsv)
	})
	sess := tsv.newSession()
	conn := nonReadingStream(t, tsv, sess.ID)
	defer conn.Close()
	fast := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
	waitFor(t, "the second subscriber", func() bool { return tsv.subscribers(sess.ID) == 2 })

	tsv.startRun(sess.ID, "go", "k", "")
	got := fast.until(t, "run_end") // fails after 10 s if the blocked client held it back
	for i := 1; i < len(got); i++ {
		if got[i].seq() != got[i-1].seq()+1 {
			t.Fatalf("event %d has seq %d after %d", i, got[i].seq(), got[i-1].seq())
		}
	}
	if len(got) < 500 {
		t.Fatalf("the fast client got %d events", len(got))
	}
	// The blocked client is still subscribed, with what it has not taken
	// still queued: it was slow, not cut.
	if n := tsv.subscribers(sess.ID); n != 2 {
		t.Fatalf("%d subscribers after the run, want 2 (the blocked one was cut)", n)
	}
	if tsv.s.queuedBytes.Load() == 0 {
		t.Fatal("nothing is queued for the blocked client: it was not blocked")
	}
}

// smallWriteBuffers gives the server's side of each connection a small
// socket buffer, so a client that does not read blocks the server's writes
// after a few frames.
func smallWriteBuffers(tsv *testServer) {
	tsv.connContext = func(ctx context.Context, c net.Conn) context.Context {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(4096)
		}
		return ctx
	}
}

// nonReadingStream opens the session's event stream on a raw connection
// that reads nothing, and waits until the server has subscribed it.
func nonReadingStream(t *testing.T, tsv *testServer, sessionID string) net.Conn {
	t.Helper()
	before := tsv.subscribers(sessionID)
	conn, err := net.Dial("tcp", tsv.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: %s\r\n\r\n", sessionID, tsv.ts.Listener.Addr())
	waitFor(t, "the subscriber", func() bool { return tsv.subscribers(sessionID) == before+1 })
	return conn
}

// An event reaches a waiting stream writer before the run makes its next
// one. The run's goroutine and the model stream's reader hand each event
// over and acknowledge it (agent.pump); on one processor that handshake
// passes the processor back and forth between the two, and a writer woken
// by emit, unless emit yields to it, waits behind them until the scheduler
// preempts them (up to a time slice, 10 ms) while the model keeps talking.
func TestEmitYieldsToWokenWriter(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	tsv := newTestServer(t, nil)
	v := tsv.newSession()
	ss, e := tsv.s.session(v.ID)
	if e != nil {
		t.Fatal(e)
	}
	sub, _, e := tsv.s.subscribe(v.ID, "", -1)
	if e != nil {
		t.Fatal(e)
	}
	const n = 200
	batches := make(chan int, n)
	go func() {
		defer close(batches)
		for got := 0; got < n; {
			frames, err := sub.next(context.Background(), nil)
			if err != nil {
				return
			}
			batches <- len(frames)
			got += len(frames)
		}
	}()
	waitFor(t, "the writer to wait", func() bool { return len(sub.wake) == 0 })
	runtime.Gosched() // let it block in next

	// The model's reader, as agent.pump: hand over an event, wait for its
	// acknowledgement.
	items, ack := make(chan int), make(chan struct{})
	go func() {
		defer close(items)
		for i := range n {
			items <- i
			<-ack
		}
	}()
	data := []byte(`{"v":2,"type":"message_update","event":"text_delta","delta":"x"}`)
	for range items {
		tsv.s.emit(ss, "message_update", "run_x", func(int64) []byte { return data })
		ack <- struct{}{}
	}
	var sizes []int
	for b := range batches {
		sizes = append(sizes, b)
	}
	sub.Close()
	// One event per wake, now and then two (the scheduler's fairness tick
	// runs the yielding goroutine once more); without the yield the writer
	// took all 200 in one batch, once the run had ended.
	if len(sizes) < n/2 || slices.Max(sizes) > 4 {
		t.Fatalf("the writer took the %d events in %d batches, the largest %d: it waited behind the run", n, len(sizes), slices.Max(sizes))
	}
}
