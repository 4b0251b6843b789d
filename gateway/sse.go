package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// serveSessionEvents is GET /v1/sessions/{id}/events: the session's
// events as SSE, from Last-Event-ID (or ?after=) on, live until the client
// goes, is too slow, or the server shuts down.
func (s *Server) serveSessionEvents(w http.ResponseWriter, r *http.Request) {
	after, e := afterParam(r, -1)
	if e != nil {
		writeError(w, e)
		return
	}
	s.serveEvents(w, r, r.PathValue("id"), "", after, false)
}

// serveRunEvents is GET /v1/runs/{id}/events: one run's events, from its
// first (or Last-Event-ID, ?after=) to its run_end, where the stream ends.
func (s *Server) serveRunEvents(w http.ResponseWriter, r *http.Request) {
	rs, e := s.runByID(r.PathValue("id"))
	if e != nil && s.cl.node != nil { // held by another node: its events are in the database
		run, e := s.clusterRun(r.Context(), r.PathValue("id"))
		if e != nil {
			writeError(w, e)
			return
		}
		after, e := afterParam(r, 0)
		if e != nil {
			writeError(w, e)
			return
		}
		s.serveEvents(w, r, run.SessionID, run.ID, after, finalStatus(run.Status))
		return
	}
	if e != nil {
		writeError(w, e)
		return
	}
	after, e := afterParam(r, rs.afterSeq)
	if e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	ended := rs.ended
	s.mu.Unlock()
	s.serveEvents(w, r, rs.sess.id, rs.id, after, ended)
}

// stopGrace is how long Shutdown lets a stream send what is queued.
const stopGrace = time.Second

// afterParam reads Last-Event-ID, or else ?after=.
func afterParam(r *http.Request, def int64) (int64, *Error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errorf(CodeInvalidRequest, "Last-Event-ID / after %q is not a seq", v)
	}
	return n, nil
}

// serveEvents streams a subscription as SSE. ended says the run of a run
// stream had ended before it began: the stream then ends once what the
// ring replays is sent (at once when nothing is left after after).
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, sessionID, runID string, after int64, ended bool) {
	if e := s.acquireStream(); e != nil {
		writeError(w, e)
		return
	}
	defer s.openStreams.Add(-1)
	rc := http.NewResponseController(w)
	sub, res, e := s.subscribe(sessionID, runID, after)
	if e != nil {
		writeError(w, e)
		return
	}
	s.streams.Add(1)
	defer s.streams.Done()
	defer sub.Close()
	// A client that stopped reading blocks our writes once the socket's
	// buffers fill: when its subscription is cut (or the server stops), the
	// write deadline passes, so the blocked write returns and the
	// connection is closed.
	done := make(chan struct{})
	watched := make(chan struct{})
	// Wait for the watcher before sub.Close (deferred earlier, so run
	// later) closes sub.closed: a watcher that woke late could otherwise set
	// the deadline on a connection already back in keep-alive, and the next
	// request on it would fail (EOF).
	defer func() { close(done); <-watched }()
	go func() {
		defer close(watched)
		select {
		case <-sub.closed:
			_ = rc.SetWriteDeadline(time.Now())
		case <-s.stop:
			// What is queued (a run's last events) is sent first; a client
			// that does not read has a moment, not forever.
			_ = rc.SetWriteDeadline(time.Now().Add(stopGrace))
		case <-done:
		}
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	bw := sseBuf{w: w}
	fmt.Fprintf(bw.get(), "retry: 2000\n\n")
	if bw.flush() != nil || rc.Flush() != nil {
		return
	}
	ended = ended || res.runEnded // it ended while the stream began
	if ended && res.Replayed == 0 && !res.Resync {
		return // nothing of the run after after: its run_end was sent before
	}
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	for {
		frames, err := sub.next(r.Context(), beat.C)
		switch {
		case errors.Is(err, ErrSlowConsumer):
			// The deadline was set to now; try to say why, then end.
			_ = rc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			fmt.Fprintf(bw.get(), ": overflow\n\n")
			_ = bw.flush()
			return
		case err != nil:
			return
		}
		if frames == nil { // heartbeat
			fmt.Fprintf(bw.get(), ": keepalive %d\n\n", time.Now().UnixMilli())
		}
		end := ended && runID != "" // a replay of an ended run is all there is
		for _, f := range frames {
			writeFrame(bw.get(), f)
			if runID != "" && f.typ == "run_end" && f.runID == runID && !f.noID {
				end = true
			}
		}
		if bw.flush() != nil || rc.Flush() != nil {
			return
		}
		if end {
			return
		}
	}
}

// sseBufs are the write buffers of SSE streams. A stream holds one only
// while it writes a batch of frames, so an idle stream (most of them, most
// of the time) costs no buffer.
var sseBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// sseBuf lends a stream a buffer from sseBufs until its next flush.
type sseBuf struct {
	w  io.Writer
	bw *bufio.Writer
}

func (b *sseBuf) get() *bufio.Writer {
	if b.bw == nil {
		b.bw = sseBufs.Get().(*bufio.Writer)
		b.bw.Reset(b.w)
	}
	return b.bw
}

// flush writes what is buffered and gives the buffer back.
func (b *sseBuf) flush() error {
	if b.bw == nil {
		return nil
	}
	err := b.bw.Flush()
	b.bw.Reset(nil)
	sseBufs.Put(b.bw)
	b.bw = nil
	return err
}

// writeFrame writes one SSE message. It runs per event and per stream, so
// it allocates nothing: the seq is formatted into the buffer, the data is
// not copied to a string.
func writeFrame(bw *bufio.Writer, f frame) {
	if !f.noID {
		bw.WriteString("id: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), f.seq, 10))
		bw.WriteByte('\n')
	}
	bw.WriteString("event: ")
	bw.WriteString(f.typ)
	bw.WriteByte('\n')
	// Our JSON has no newlines; a data line per line keeps SSE valid if
	// it ever did.
	for line := range bytes.SplitSeq(f.data, []byte("\n")) {
		bw.WriteString("data: ")
		bw.Write(line)
		bw.WriteByte('\n')
	}
	bw.WriteByte('\n')
}
