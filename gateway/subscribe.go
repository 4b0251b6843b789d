package gateway

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrSlowConsumer ends a subscription whose client did not keep up: its
// queue filled. The client resumes by seq; nothing was dropped from the
// stream it saw.
var ErrSlowConsumer = errors.New("gateway: slow consumer: the client's queue is full")

// errClosed ends a subscription the server closed (Shutdown, a deleted
// session, the end of a run's stream).
var errClosed = errors.New("gateway: the stream was closed")

// subscription is one client's view of a session's events (or of one
// run's): what was replayed at subscribe, then a bounded queue of live
// events. Offering never blocks: a full queue cuts the subscription and
// frees what it held.
type subscription struct {
	s      *Server
	ss     *sessionState
	runID  string // only this run's events, when set
	limits QueueLimit

	mu     sync.Mutex
	q      []frame
	spare  []frame       // the buffer next handed out last, reused for q
	live   int           // frames of q that are live (not replayed): the queue's count
	bytes  int64         // bytes of the live frames
	err    error         // why it ended; nil while live
	wake   chan struct{} // a frame or an end is waiting (cap 1)
	closed chan struct{} // closed when it ends
}

// SubscribeResult says what a subscribe found.
type SubscribeResult struct {
	// HeadSeq is the session's last seq when the subscription began.
	HeadSeq int64 `json:"headSeq"`
	// Replayed counts the events replayed from the ring.
	Replayed int `json:"replayed"`
	// Resync is set when afterSeq was older than the ring (or newer than
	// the head): the client must refetch the session, its messages and its
	// pending approvals; live events follow.
	Resync bool `json:"resync"`
	// runEnded: a run subscription that resyncs to a run whose run_end
	// has gone out already; nothing of it is left to come live.
	runEnded bool
}

// subscribe subscribes to the events of session id (runID "") or of one
// of its runs, after afterSeq (-1: live events only). The first frames are
// the replay from the ring (or one resync), then an approval_requested for
// each pending approval, then live events.
func (s *Server) subscribe(sessionID, runID string, afterSeq int64) (*subscription, SubscribeResult, *Error) {
	ss, err := s.session(sessionID)
	if err != nil {
		return nil, SubscribeResult{}, err
	}
	var remote clusterPendingFrames
	if s.cl.node != nil {
		s.ensureTail(ss)
		remote = s.clusterPendingFrames(ss, runID)
	}
	sub := &subscription{s: s, ss: ss, runID: runID, limits: s.cfg.ClientQueue,
		wake: make(chan struct{}, 1), closed: make(chan struct{})}
	var res SubscribeResult
	// The pending list is read under s.mu and the ring under ss.emu (in
	// that order, as everywhere), both held until the subscription is
	// registered: an approval listed and emitted meanwhile can neither be
	// missed by a live client nor sent twice to a resuming one.
	s.mu.Lock()
	defer s.mu.Unlock()
	pending := s.pendingOfLocked(ss, runID)
	ss.emu.Lock()
	defer ss.emu.Unlock()
	res.HeadSeq = ss.seq
	if afterSeq >= 0 {
		oldest := ss.oldestLocked()
		if afterSeq < oldest-1 || afterSeq > ss.seq {
			res.Resync = true
			sub.q = append(sub.q, frame{seq: ss.seq, typ: EventResync, runID: runID,
				data: gatewayEvent(EventResync, ss.seq, runID, ss.id, map[string]any{"oldestSeq": oldest, "headSeq": ss.seq})})
			res.runEnded = runID != "" && s.runEndSentLocked(ss, runID)
		} else {
			for _, f := range ss.ring[ss.ringHead:] {
				if f.seq > afterSeq && (runID == "" || f.runID == runID) {
					sub.q = append(sub.q, f) // shared with the ring: not counted in the queue
					res.Replayed++
				}
			}
		}
	}
	for _, pa := range pending {
		f := pa.frame
		if f.data == nil || pa.answered() {
			continue // not sent yet (it comes live), or answered since it was listed
		}
		if afterSeq >= 0 && !res.Resync && f.seq > afterSeq {
			continue // in the replay already, with its id
		}
		f.noID = true
		sub.q = append(sub.q, f)
	}
	if s.cl.node != nil {
		sub.q = remote.appendLocked(sub.q, ss, pending, afterSeq, res.Resync)
	}
	if ss.subs == nil {
		ss.subs = map[*subscription]struct{}{}
	}
	ss.subs[sub] = struct{}{}
	if len(sub.q) > 0 {
		sub.wake <- struct{}{}
	}
	return sub, res, nil
}

// runEndSentLocked says run runID of ss has emitted its run_end: the run
// has finished, or its run_end is in the ring (it ends before finish
// runs). s.mu and ss.emu are held.
func (s *Server) runEndSentLocked(ss *sessionState, runID string) bool {
	if rs := s.runs[runID]; rs != nil && rs.ended {
		return true
	}
	for _, f := range ss.ring[ss.ringHead:] {
		if f.typ == "run_end" && f.runID == runID && !f.noID {
			return true
		}
	}
	return false
}

// offer queues a live frame, or cuts the subscription when its queue is
// full. It reports whether it signalled the consumer (which waits for a
// frame, or is about to look for one): emit then yields to it. The caller
// holds ss.emu.
func (sub *subscription) offer(f frame) bool {
	if sub.runID != "" && f.runID != sub.runID {
		return false
	}
	sub.mu.Lock()
	if sub.err != nil {
		sub.mu.Unlock()
		return false
	}
	if sub.live+1 > sub.limits.Frames || sub.bytes+f.size() > sub.limits.Bytes {
		sub.endLocked(ErrSlowConsumer)
		sub.mu.Unlock()
		delete(sub.ss.subs, sub)
		return false
	}
	sub.q = append(sub.q, f)
	sub.live++
	sub.bytes += f.size()
	sub.s.queuedBytes.Add(f.size())
	sub.mu.Unlock()
	select {
	case sub.wake <- struct{}{}:
		return true
	default:
		return false
	}
}

// endLocked ends the subscription with err and frees its queue. sub.mu is
// held.
func (sub *subscription) endLocked(err error) {
	if sub.err != nil {
		return
	}
	sub.err = err
	sub.s.queuedBytes.Add(-sub.bytes)
	sub.q, sub.spare, sub.live, sub.bytes = nil, nil, 0, 0
	close(sub.closed)
}

// Close ends the subscription; its frames are dropped.
func (sub *subscription) Close() {
	sub.ss.emu.Lock()
	delete(sub.ss.subs, sub)
	sub.ss.emu.Unlock()
	sub.mu.Lock()
	sub.endLocked(errClosed)
	sub.mu.Unlock()
}

// next returns the frames waiting, waiting for one if there are none; the
// error says why the subscription ended (ErrSlowConsumer, errClosed) or
// ctx's.
func (sub *subscription) next(ctx context.Context, idle <-chan time.Time) ([]frame, error) {
	stop := sub.s.stop
	for {
		sub.mu.Lock()
		if sub.err != nil {
			err := sub.err
			sub.mu.Unlock()
			return nil, err
		}
		if len(sub.q) > 0 {
			// Two buffers take turns: the one handed out last time is done
			// with (the consumer called again), so it takes the next frames.
			q := sub.q
			clear(sub.spare)
			sub.q, sub.spare, sub.live = sub.spare[:0], q, 0
			sub.s.queuedBytes.Add(-sub.bytes)
			sub.bytes = 0
			sub.mu.Unlock()
			return q, nil
		}
		sub.mu.Unlock()
		if stop == nil { // the server stopped and everything queued was sent
			return nil, errClosed
		}
		select {
		case <-sub.wake:
		case <-sub.closed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-idle:
			return nil, nil // time for a heartbeat
		case <-stop:
			stop = nil // send what is queued (a run's last events), then end
		}
	}
}
