package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/cluster"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// QueueLimit bounds what waits for one client: Frames events or Bytes of
// them, whichever comes first.
type QueueLimit struct {
	Frames int
	Bytes  int64
}

// RingLimit bounds the events a session keeps for clients that resume:
// Events or Bytes, whichever comes first, dropped Keep after the session's
// last run ended.
type RingLimit struct {
	Events int
	Bytes  int64
	Keep   time.Duration
}

// The defaults of Config.
const (
	DefaultMaxInflight  = 256
	DefaultSessionQueue = 20
	DefaultHeartbeat    = 15 * time.Second
	DefaultMaxBody      = 25 << 20
	DefaultInjectQueue  = 64
	DefaultBodyTimeout  = 60 * time.Second
	DefaultMaxStreams   = 10_000
)

// DefaultClientQueue and DefaultRing are the defaults of Config.ClientQueue
// and Config.Ring. The ring is far larger than a client queue, so a client
// cut for being slow resumes without a gap.
var (
	DefaultClientQueue = QueueLimit{Frames: 1024, Bytes: 8 << 20}
	DefaultRing        = RingLimit{Events: 10_000, Bytes: 16 << 20, Keep: 15 * time.Minute}
)

// RunSettings are what a run of a session is made from: the session and
// the settings its slash commands changed.
type RunSettings struct {
	SessionID string
	Cwd       string
	// Model is provider/id, "" for the server's default; Thinking a
	// thinking level name, "" for the default.
	Model    string
	Thinking string
}

// Config is what a Server is made of. Runner, Store and Prepare are
// required; zero values elsewhere mean the defaults.
type Config struct {
	// Runner runs the runs; its Config.Store must be Store.
	Runner *runner.Runner
	Store  session.Store
	// Prepare returns the runner.Request of a run without its prompt,
	// session and events (which the Server fills in): the model, tools,
	// system prompt, approval policy. It is called once per run; a
	// returned Approval must be the run's own (it remembers "always"
	// answers), and its Ask is replaced by the Server's.
	Prepare func(ctx context.Context, rs RunSettings) (runner.Request, error)
	// Compact compacts a session now (the compact command), returning a
	// sentence saying what was done; nil summarises with the model
	// Prepare gives the session's runs (runner.CompactSession), without
	// hooks.
	Compact func(ctx context.Context, rs RunSettings, instructions string) (string, error)
	// Cwd is the working directory of a session created without one; ""
	// makes cwd required.
	Cwd string
	// OnDelete, when set, is given the transcript of a session that
	// DeleteSession has just deleted, as it was read before (an external
	// engine's own session it was bound to can then be deleted too). Its
	// error is logged, not returned: our session is gone either way.
	OnDelete func(ctx context.Context, t *session.Transcript) error
	// Logger receives what the Server reports without failing a request
	// (an OnDelete error, a damaged seq file); nil is slog.Default().
	Logger *slog.Logger
	// CheckModel, when set, vets a model name of the model command or of a
	// session's creation.
	CheckModel func(ctx context.Context, model string) error

	// Tokens are the bearer tokens and their scopes; empty lets every
	// request in (for a loopback listener only: agentloop serve refuses
	// anything else). AllowOrigins are the Origins a browser may call from
	// besides the server's own address ("*" any).
	Tokens       TokenSet
	AllowOrigins []string

	MaxInflight  int        // concurrent requests; beyond → 503 overloaded
	ClientQueue  QueueLimit // per client
	Ring         RingLimit  // per session
	Heartbeat    time.Duration
	SessionQueue int // queued runs per session; beyond → 429 queue_full
	// InjectQueue bounds the steer and follow-up messages waiting in one
	// run for it to read them; beyond → 429 queue_full.
	InjectQueue int
	MaxBody     int64 // request body bytes; beyond → 413
	// BodyTimeout bounds the reading of one request's body (a client that
	// trickles it is answered 408 request_timeout and its connection
	// closed). It does not touch event streams or WebSockets, whose
	// requests have no body: they live as long as their clients read.
	BodyTimeout time.Duration
	// MaxStreams bounds the event streams (SSE) and WebSocket connections
	// open at once; beyond → 503 overloaded.
	MaxStreams int
	// ApprovalTimeout denies a pending approval not answered in time; 0
	// waits until it is answered or its run is aborted.
	ApprovalTimeout time.Duration
	// StateDir keeps each session's last seq, so numbering continues
	// after a restart; "" keeps it in memory only.
	StateDir string
	Clock    clock.Clock

	// Cluster, when set, runs the Server as one node of a cluster on
	// PostgreSQL (docs/scale-out.md): runs are queued in the database and
	// claimed by any node, at most ClusterRuns at a time on this one, and
	// every node serves a session's events from the database. Store must
	// be the node's (Cluster.SessionStore()), and so the Runner's.
	Cluster     *cluster.Node
	ClusterRuns int
}

// Server serves the sessions of a Runner. Make one with New.
type Server struct {
	cfg  Config
	auth *authenticator
	clk  clock.Clock

	mu        sync.Mutex
	sessions  map[string]*sessionState
	runs      map[string]*runState
	approvals map[string]*pendingAction
	// resolved remembers answered actions, so a late answer is 409
	// already_resolved rather than 404; they are forgotten with their run
	// (keptRuns).
	resolved map[string]struct{}
	closing  bool
	aborting bool // Shutdown's deadline passed: runs that start are aborted

	inflight chan struct{}
	// stop is closed when Shutdown begins: streams end, new requests are
	// refused.
	stop     chan struct{}
	stopOnce sync.Once
	// wg counts the Server's goroutines (run watchers, approval timers).
	wg sync.WaitGroup
	// streams counts open event streams, so Shutdown waits for them.
	streams sync.WaitGroup
	// openStreams counts the event streams and WebSockets against
	// Config.MaxStreams.
	openStreams atomic.Int64

	// queuedBytes is the bytes waiting in every client queue (tests,
	// stats).
	queuedBytes atomic.Int64

	cl clusterState // cluster mode (Config.Cluster)
}

// New returns a Server for cfg, which it copies.
func New(cfg Config) (*Server, error) {
	if cfg.Runner == nil || cfg.Store == nil || cfg.Prepare == nil {
		return nil, errors.New("gateway: Config.Runner, Store and Prepare are required")
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.ClientQueue.Frames <= 0 {
		cfg.ClientQueue.Frames = DefaultClientQueue.Frames
	}
	if cfg.ClientQueue.Bytes <= 0 {
		cfg.ClientQueue.Bytes = DefaultClientQueue.Bytes
	}
	if cfg.Ring.Events <= 0 {
		cfg.Ring.Events = DefaultRing.Events
	}
	if cfg.Ring.Bytes <= 0 {
		cfg.Ring.Bytes = DefaultRing.Bytes
	}
	if cfg.Ring.Keep <= 0 {
		cfg.Ring.Keep = DefaultRing.Keep
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.SessionQueue <= 0 {
		cfg.SessionQueue = DefaultSessionQueue
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.InjectQueue <= 0 {
		cfg.InjectQueue = DefaultInjectQueue
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ClusterRuns <= 0 {
		cfg.ClusterRuns = DefaultClusterRuns
	}
	s := &Server{
		cfg: cfg, auth: newAuthenticator(cfg.Tokens), clk: clock.Or(cfg.Clock),
		sessions: map[string]*sessionState{}, runs: map[string]*runState{}, approvals: map[string]*pendingAction{}, resolved: map[string]struct{}{},
		inflight: make(chan struct{}, cfg.MaxInflight), stop: make(chan struct{}),
	}
	if cfg.Cluster != nil {
		s.startCluster()
	}
	return s, nil
}

// Shutdown stops accepting requests and runs, lets the runs in progress
// finish until ctx ends, then aborts the rest (on a cluster, hands them to
// another node: see Node.Handoff), ends every event stream,
// and waits for the Server's goroutines. It does not close the Runner
// (the caller's) nor the http.Server (call its Shutdown after this one,
// so the event streams have ended and it can drain).
func (s *Server) Shutdown(ctx context.Context) error {
	if s.cl.node != nil { // claim nothing more
		s.cl.stopClaims()
		s.cl.claimWG.Wait()
	}
	s.mu.Lock()
	s.closing = true
	var queued []*runState
	for _, ss := range s.sessions {
		queued = append(queued, ss.queue...)
		ss.queue = nil
	}
	s.mu.Unlock()
	for _, rs := range queued {
		s.finishUnstarted(rs, runner.ReasonAborted, "the server shut down before the run started")
	}
	done := make(chan struct{})
	go func() { s.waitRuns(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.mu.Lock()
		s.aborting = true
		var claimed []*runState
		for _, rs := range s.runs {
			if rs.claim != nil && !rs.ended {
				claimed = append(claimed, rs) // another node goes on with it
				continue
			}
			if rs.h != nil {
				rs.h.Abort()
			}
		}
		s.mu.Unlock()
		s.handOff(claimed)
		<-done
	}
	s.stopOnce.Do(func() { close(s.stop) })
	s.streams.Wait()
	s.wg.Wait()
	if s.cl.node != nil {
		s.cl.stopTails()
		s.cl.tailWG.Wait()
	}
	s.mu.Lock()
	all := make([]*sessionState, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.cancelExpiry()
		s.persistSeq(ss)
	}
	return err
}

// waitRuns waits until no run is active: each has a watcher in wg, and
// no run starts once closing is set.
func (s *Server) waitRuns() { s.wg.Wait() }

// stopping reports whether Shutdown has begun.
func (s *Server) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// acquireStream counts an event stream or WebSocket against
// Config.MaxStreams; the caller gives it back with openStreams.Add(-1).
func (s *Server) acquireStream() *Error {
	if s.openStreams.Add(1) > int64(s.cfg.MaxStreams) {
		s.openStreams.Add(-1)
		e := errorf(CodeOverloaded, "the server has %d event streams and WebSockets open (its limit); retry later", s.cfg.MaxStreams)
		e.RetryAfter = time.Second
		return e
	}
	return nil
}

// Handler returns the HTTP handler of the API, the event streams, the
// WebSocket and the web chat.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	return s.guard(mux)
}
