package gateway

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/internal/atomicfile"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// Session statuses.
const (
	StatusIdle           = "idle"
	StatusRunning        = "running"
	StatusRequiresAction = "requires_action"
)

// Run statuses: queued → running ⇄ requires_action → succeeded | failed |
// aborted | timeout.
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunAborted   = "aborted"
	RunTimeout   = "timeout"
)

// frame is one event as it leaves the server: its seq, type and run, and
// its JSON (the data of an SSE message, the params of a notification).
type frame struct {
	seq   int64
	typ   string
	runID string
	data  []byte
	// noID marks a copy re-sent out of order (a pending approval on
	// subscribe): SSE sends it without an id, so a client's Last-Event-ID
	// does not move back.
	noID bool
}

func (f frame) size() int64 { return int64(len(f.data)) + 64 }

// sessionState is what the Server knows of a session. The fields under
// Server.mu: settings, runs. Under emu: the seq, the ring, the
// subscribers; emu is never held while taking Server.mu.
type sessionState struct {
	id       string
	cwd      string
	label    string
	parentID string
	created  time.Time
	// persisted: the store has the session (false until the first run of
	// a session made by POST /v1/sessions appends its first message).
	persisted bool
	model     string
	thinking  string
	deleted   bool // DeleteSession has begun

	active *runState
	queue  []*runState
	// followUp: something was appended for a run while the session was
	// busy (FollowUp); after its last run, one more reads it if nobody did.
	followUp bool
	// idem maps idempotency keys to the run they reached; ended are the
	// session's last ended runs, oldest first (retireLocked).
	idem  map[string]idemEntry
	ended []*runState

	emu       sync.Mutex
	seq       int64
	reserved  int64 // the seq file's reservation: seqs up to it may be used
	ring      []frame
	ringHead  int // index of the oldest frame kept
	ringBytes int64
	subs      map[*subscription]struct{}
	// woke: the last emitLocked woke a subscriber's writer (emit
	// yields to it).
	woke bool
	// expiry, when set, stops the timer that drops the ring Ring.Keep
	// after the session's last run ended.
	expiry func() bool

	// Cluster mode: writer stores the events of the session's run claimed
	// on this node (nil while it runs elsewhere, or not at all); tailOnce
	// starts following the session's stored events.
	writer   *eventWriter
	tailOnce sync.Once
}

// idemEntry is what a start with an idempotency key did: the run it
// started or steered ("steer") or queued on a steer ("queued").
type idemEntry struct {
	run       *runState
	delivered string
	// body is the request's fingerprint: a retry must repeat it.
	body [32]byte
}

// runState is a run the Server started or queued.
type runState struct {
	id    string
	sess  *sessionState
	input runInput
	// resume: the run has no prompt of its own and reads what the session
	// holds: a follow-up run (FollowUp), or a takeover whose prompt is
	// already stored.
	resume    bool
	keys      []string // the idempotency keys that name it
	createdAt time.Time
	// afterSeq is the session's seq before the run's first event: a run
	// stream without ?after= starts there.
	afterSeq int64

	// Under Server.mu.
	status    string
	h         *runner.Run
	startedAt time.Time
	endedAt   time.Time
	reason    string
	errMsg    string
	usage     llm.Usage
	ended     bool
	pending   map[string]*pendingAction
	answered  []string // ids of its resolved actions (in Server.resolved)
	// injected counts the steer and follow-up messages given to the run
	// that it has not read yet (Config.InjectQueue); promptSeen: the
	// first user message the run reads is its own prompt.
	injected   int
	promptSeen bool
	// remote: of the injected, those another node sent (a claimed
	// run's commands), whose reading the cluster is told (MarkRead).
	remote int
	// finished is closed once the run has ended and its session moved on.
	finished chan struct{}
	finOnce  sync.Once

	// claim is the cluster's claim the run runs under (cluster mode);
	// release frees its slot on this node.
	claim   *cluster.Claim
	release func()
	turn    atomic.Int64 // the run's current turn, from its events
}

func (rs *runState) closeFinished() { rs.finOnce.Do(func() { close(rs.finished) }) }

// runInput is what a run says: the prompt and its images.
type runInput struct {
	text   string
	images []llm.Content
}

// emitLocked numbers an event of the session, keeps it in the ring and
// hands it to the subscribers. ss.emu must be held. mk builds the event's
// JSON for its seq.
func (s *Server) emitLocked(ss *sessionState, typ, runID string, mk func(seq int64) []byte) frame {
	if s.cl.node != nil {
		// The database numbers the events and every node's tail delivers
		// them: only the node running the session's run writes any.
		if ss.writer != nil {
			ss.writer.add(typ, mk)
		}
		return frame{}
	}
	s.reserveLocked(ss)
	ss.seq++
	f := frame{seq: ss.seq, typ: typ, runID: runID, data: mk(ss.seq)}
	s.ringAppend(ss, f)
	ss.woke = false
	for sub := range ss.subs {
		if sub.offer(f) {
			ss.woke = true
		}
	}
	return f
}

// emit is emitLocked under ss.emu. When it woke a stream's writer, it
// yields, so the writer sends the event before the emitting goroutine
// goes on to make the next one. Without the yield, the run's goroutine
// hands its processor to the model stream's reader next (the agent's
// handshake), and the woken writer waits at the back of the run queue,
// behind every other run's work: on a loaded machine that wait was most
// of an event's delay (docs/benchmarks.md).
func (s *Server) emit(ss *sessionState, typ, runID string, mk func(seq int64) []byte) frame {
	ss.emu.Lock()
	f := s.emitLocked(ss, typ, runID, mk)
	woke := ss.woke
	ss.woke = false
	ss.emu.Unlock()
	if woke {
		runtime.Gosched()
	}
	return f
}

// emitGateway emits one of the gateway's own events: the protocol v2
// envelope with fields beside it.
func (s *Server) emitGateway(ss *sessionState, typ, runID string, fields map[string]any) frame {
	return s.emit(ss, typ, runID, func(seq int64) []byte { return gatewayEvent(typ, seq, runID, ss.id, fields) })
}

// gatewayEvent encodes a gateway event as protocol v2.
func gatewayEvent(typ string, seq int64, runID, sessionID string, fields map[string]any) []byte {
	m := make(map[string]any, len(fields)+5)
	for k, v := range fields {
		m[k] = v
	}
	m["v"], m["type"], m["seq"], m["runId"] = runner.ProtocolVersion, typ, seq, runID
	if sessionID != "" {
		m["sessionId"] = sessionID
	}
	b, err := llm.MarshalJSON(m)
	if err != nil { // only values the gateway made are here
		panic("gateway: encode " + typ + ": " + err.Error())
	}
	return b
}

// ringAppend keeps f in the session's ring, dropping the oldest frames
// beyond the ring's limits.
func (s *Server) ringAppend(ss *sessionState, f frame) {
	ss.ring = append(ss.ring, f)
	ss.ringBytes += f.size()
	lim := s.cfg.Ring
	for len(ss.ring)-ss.ringHead > lim.Events || ss.ringBytes > lim.Bytes && len(ss.ring)-ss.ringHead > 1 {
		ss.ringBytes -= ss.ring[ss.ringHead].size()
		ss.ring[ss.ringHead] = frame{}
		ss.ringHead++
	}
	// Compact once half the slice is dead, so the ring's memory stays
	// proportional to what it keeps.
	if ss.ringHead > 0 && ss.ringHead >= len(ss.ring)/2 {
		n := copy(ss.ring, ss.ring[ss.ringHead:])
		clear(ss.ring[n:])
		ss.ring, ss.ringHead = ss.ring[:n], 0
	}
}

// oldestLocked is the seq of the oldest event in the ring (head+1 when it
// is empty).
func (ss *sessionState) oldestLocked() int64 {
	if len(ss.ring) > ss.ringHead {
		return ss.ring[ss.ringHead].seq
	}
	return ss.seq + 1
}

// scheduleExpiry drops the session's ring Ring.Keep after its last run
// ended, unless a run starts before: an idle session keeps no events in
// memory for long. A client resuming after that gets a resync.
func (s *Server) scheduleExpiry(ss *sessionState) {
	ss.emu.Lock()
	defer ss.emu.Unlock()
	if ss.expiry != nil {
		ss.expiry()
	}
	ss.expiry = s.clk.AfterFunc(s.cfg.Ring.Keep, func() {
		s.mu.Lock()
		idle := ss.active == nil && len(ss.queue) == 0
		s.mu.Unlock()
		if !idle {
			return
		}
		ss.emu.Lock()
		clear(ss.ring)
		ss.ring, ss.ringHead, ss.ringBytes = nil, 0, 0
		ss.emu.Unlock()
	})
}

// cancelExpiry keeps the ring of a session whose run starts.
func (ss *sessionState) cancelExpiry() {
	ss.emu.Lock()
	defer ss.emu.Unlock()
	if ss.expiry != nil {
		ss.expiry()
		ss.expiry = nil
	}
}

// seqPath is the file that keeps a session's last seq.
func (s *Server) seqPath(id string) string {
	if s.cfg.StateDir == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return ""
	}
	return filepath.Join(s.cfg.StateDir, id+".seq")
}

// seqReserve is how many seqs a session reserves in its seq file at a
// time while it emits: after a crash, numbering resumes above every seq
// that may have been sent, so no seq is ever used twice.
const seqReserve = 1000

// loadSeq reads the seq a session's numbering continues from: its last
// seq after a clean end ("N"), or the top of its reservation ("R N") when
// the process ended while it emitted. 0 when none is kept. A file that
// is not one of those whole lines (torn or zeroed by a crash, or damaged
// on disk) is reported to Config.Logger, and numbering resumes above
// what the transcript tr (nil: none) suggests may have been sent
// (seqFloor), never from 0.
func (s *Server) loadSeq(id string, tr *session.Transcript) int64 {
	p := s.seqPath(id)
	if p == "" {
		return 0
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err == nil {
		if n, ok := parseSeq(b); ok {
			return n
		}
	}
	floor := seqFloor(tr)
	reason := "it is not a seq line"
	if err != nil {
		reason = err.Error()
	}
	s.cfg.Logger.Warn("gateway: the seq file of a session is damaged; numbering resumes above what its transcript may have sent (clients resuming get a resync)",
		"session", id, "file", p, "reason", reason, "content", strconv.Quote(string(b[:min(len(b), 32)])), "resumeAt", floor)
	return floor
}

// parseSeq reads a seq file: "N\n" or "R N\n", nothing else (a torn
// write lacks its newline).
func parseSeq(b []byte) (int64, bool) {
	v, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return 0, false
	}
	v = strings.TrimPrefix(v, "R ")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || v != strconv.FormatInt(n, 10) {
		return 0, false
	}
	return n, true
}

// seqFloor is where a session's numbering resumes when its seq file is
// lost: above the events its transcript may have been streamed as. A
// streamed event adds at least a byte to the transcript (a delta), or is
// one of the few around each entry; seqReserve more covers the events
// that leave nothing there (statuses, runs that failed to start).
func seqFloor(tr *session.Transcript) int64 {
	n := int64(seqReserve)
	if tr == nil {
		return n
	}
	for _, en := range tr.Entries {
		b, err := json.Marshal(en)
		if err == nil {
			n += int64(len(b))
		}
		n += 16
	}
	return n
}

// writeSeq writes a session's seq file ("N", or "R N" for a reservation)
// so that a crash leaves the old file or the new one, whole: a temporary
// file beside it, synced, renamed over it, and the directory synced.
func (s *Server) writeSeq(id string, seq int64, reserved bool) {
	p := s.seqPath(id)
	if p == "" {
		return
	}
	line := strconv.FormatInt(seq, 10) + "\n"
	if reserved {
		line = "R " + line
	}
	if err := atomicfile.Write(p, []byte(line), true); err != nil {
		s.cfg.Logger.Warn("gateway: cannot write the seq file of a session", "session", id, "err", err)
	}
}

// reserveLocked makes sure the seq file covers the next seq. ss.emu is
// held.
func (s *Server) reserveLocked(ss *sessionState) {
	if s.cfg.StateDir == "" || ss.seq < ss.reserved {
		return
	}
	ss.reserved = ss.seq + seqReserve
	s.writeSeq(ss.id, ss.reserved, true)
}

// eventJSON is the protocol v2 JSON of a runner event with the session's
// envelope: the encoding of agentloop run --json (Event.MarshalJSON, HTML
// characters left as they are).
func eventJSON(ev runner.Event) []byte {
	b, err := ev.MarshalJSON()
	if err != nil {
		b, _ = json.Marshal(map[string]any{"v": runner.ProtocolVersion, "type": "warning", "seq": ev.Seq,
			"runId": ev.RunID, "sessionId": ev.SessionID, "text": "an event could not be encoded: " + err.Error()})
	}
	return b
}
