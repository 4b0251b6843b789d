package google_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A finished stream hands its connection back: consecutive calls share one.
func TestConnectionReuse(t *testing.T) {
	body := fixture(t, "text.sse")
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
		// The end of the body comes in a later packet, as it does when a
		// real server flushes each event.
		w.(http.Flusher).Flush()
		time.Sleep(time.Millisecond)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	m := newModel(srv, 0)
	for i := 0; i < 3; i++ {
		if r := collect(t, m, context.Background(), simpleRequest()); r.err != nil {
			t.Fatal(r.err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("3 calls used %d connections", n)
	}
}
