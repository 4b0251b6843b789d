package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/internal/proc"
	"github.com/agentloop/agentloop/tool"
)

const (
	// DefaultCallTimeout is how long a tool call may take before it gets
	// an error result.
	DefaultCallTimeout = 60 * time.Second
	// DefaultStartTimeout is how long a server may take to start and list
	// its tools.
	DefaultStartTimeout = 30 * time.Second

	stopTimeout = 2 * time.Second
)

// Options tunes Start. Nil means the defaults.
type Options struct {
	// CallTimeout bounds each tool call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// StartTimeout bounds starting one server and listing its tools; zero
	// means DefaultStartTimeout.
	StartTimeout time.Duration
	// HTTPClient is used for HTTP and SSE servers; nil means a client
	// without a timeout (calls are bounded by CallTimeout).
	HTTPClient *http.Client
	// Stderr also receives what stdio servers write to their stderr. The
	// last lines are kept either way, for Status.
	Stderr io.Writer
	// Logger receives start-up failures and servers that exit; nil means
	// slog.Default().
	Logger *slog.Logger
	// TrustAnnotations lets a tool's readOnlyHint make its calls
	// concurrency-safe and read-only. Off by default: hints come from the
	// server and are not verified.
	TrustAnnotations bool
	// ClientName and ClientVersion introduce agentloop to servers.
	ClientName, ClientVersion string
	// EnvDeny and EnvAllow steer the environment a stdio server inherits
	// from agentloop: provider keys and other secrets
	// (proc.DefaultSecretVars) and the variables EnvDeny names are
	// removed, those EnvAllow names kept. The server's own "env" entries
	// of its configuration are always passed.
	EnvDeny, EnvAllow []string
	// Secrets are values no inherited variable may hold, whatever its
	// name (proc.EnvPolicy.Secrets): the run's API keys.
	Secrets []string
}

// State is where a server is in its life.
type State string

// The states of a server.
const (
	StateReady  State = "ready"  // started, tools listed
	StateFailed State = "failed" // could not start or list its tools
	StateExited State = "exited" // was ready, then its connection ended
	StateClosed State = "closed" // stopped by Close
)

// ServerStatus describes one server. It marshals to JSON with Err as its
// text, for `agentloop mcp list --json` and the gateway.
type ServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     State  `json:"state"`
	// Err says why the server is failed or exited.
	Err error `json:"-"`
	// Tools are the names of its tools as the model sees them.
	Tools []string `json:"tools,omitempty"`
	// Source is the configuration file that defined the server.
	Source string `json:"source,omitempty"`
}

// MarshalJSON renders the status with Err as an "error" string.
func (s ServerStatus) MarshalJSON() ([]byte, error) {
	type plain ServerStatus
	var msg string
	if s.Err != nil {
		msg = s.Err.Error()
	}
	return json.Marshal(struct {
		plain
		Error string `json:"error,omitempty"`
	}{plain(s), msg})
}

// Manager holds the running MCP servers of a run and their tools.
type Manager struct {
	opts    Options
	servers []*server
	closed  sync.Once
}

type server struct {
	name string
	cfg  ServerConfig
	m    *Manager

	mu      sync.Mutex
	state   State
	err     error
	session *sdk.ClientSession
	tools   []*Tool          // as the server lists them now
	known   map[string]*Tool // every tool it listed in this run, by its remote name
	stale   bool             // it said its list changed (Refresh lists it again)
	proc    *proc.Command    // a stdio server's command, its tree owned by proc
	stderr  *tailWriter
	// The read end of a stdio server's stderr pipe, the write end (closed
	// once the server has started), and the copier's end.
	stderrR, stderrW *os.File
	stderrDone       chan struct{}
	cancelConn       context.CancelFunc               // ends the connection's context
	calls            map[*int]context.CancelCauseFunc // in-flight tool calls
	watched          chan struct{}                    // closed when the watcher has seen the connection end
}

// Start starts every server in cfg concurrently and lists their tools;
// it returns when all of them are ready or have failed, so the tools are
// complete before the first model call. A server that fails is reported
// by Status, not returned as an error: the error is only ctx's, when it
// ends before start-up does (everything started is then stopped).
func Start(ctx context.Context, cfg Config, opts *Options) (*Manager, error) {
	m := &Manager{}
	if opts != nil {
		m.opts = *opts
	}
	if m.opts.CallTimeout <= 0 {
		m.opts.CallTimeout = DefaultCallTimeout
	}
	if m.opts.StartTimeout <= 0 {
		m.opts.StartTimeout = DefaultStartTimeout
	}
	if m.opts.Logger == nil {
		m.opts.Logger = slog.Default()
	}
	if m.opts.ClientName == "" {
		m.opts.ClientName = "agentloop"
	}
	if m.opts.ClientVersion == "" {
		m.opts.ClientVersion = "dev"
	}
	for _, sc := range cfg.Servers {
		if sc.Transport() == TransportStdio {
			// Descendants of a server that outlive it must be found and
			// ended by Close, not reparented to init.
			_ = proc.EnableSubreaper()
			break
		}
	}
	var wg sync.WaitGroup
	for _, name := range cfg.Names() {
		s := &server{name: name, cfg: cfg.Servers[name], m: m, stderr: &tailWriter{max: 4096}}
		m.servers = append(m.servers, s)
		wg.Go(func() { s.start(ctx) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (s *server) start(ctx context.Context) {
	fail := func(err error) {
		s.mu.Lock()
		s.state, s.err = StateFailed, err
		s.mu.Unlock()
		s.m.opts.Logger.Warn("mcp server did not start; its tools are unavailable", "server", s.name, "err", err)
	}
	if err := s.cfg.validate(); err != nil {
		fail(err)
		return
	}
	transport, err := s.transport()
	if err != nil {
		fail(err)
		return
	}
	// The connection lives on after Start returns (the SSE transport holds
	// its event stream on the context it connects with), so it gets a
	// context of its own, cancelled by the start-up deadline or ctx only
	// while starting, and by Close afterwards.
	connCtx, connCancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancelConn = connCancel
	ctx, cancel := context.WithTimeout(ctx, s.m.opts.StartTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, connCancel)
	defer stop()
	client := sdk.NewClient(&sdk.Implementation{Name: s.m.opts.ClientName, Version: s.m.opts.ClientVersion},
		&sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{},
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.toolsChanged() }})
	cs, err := client.Connect(connCtx, transport, nil)
	if s.stderrW != nil {
		s.stderrW.Close() // the server has its own copy
	}
	if err != nil {
		connCancel()
		s.sweep()
		s.drainStderr(stopTimeout)
		fail(s.explain("start", ctx, err))
		return
	}
	var tools []*Tool
	seen := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			_ = cs.Close()
			connCancel()
			s.sweep()
			s.drainStderr(stopTimeout)
			fail(s.explain("list tools", ctx, err))
			return
		}
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		tools = append(tools, newTool(s, t))
	}
	if !stop() {
		// The deadline or ctx ended the connection just as listing
		// finished.
		_ = cs.Close()
		s.sweep()
		s.drainStderr(stopTimeout)
		fail(s.explain("start", ctx, context.Cause(ctx)))
		return
	}
	s.mu.Lock()
	s.state, s.session, s.tools = StateReady, cs, tools
	s.known = make(map[string]*Tool, len(tools))
	for _, t := range tools {
		s.known[t.remote] = t
	}
	s.watched = make(chan struct{})
	s.mu.Unlock()
	go s.watch(cs)
}

// explain turns a start-up error into one that says what happened,
// with the end of the server's stderr when there is any.
func (s *server) explain(step string, ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s", s.m.opts.StartTimeout)
	}
	err = fmt.Errorf("%s: %w", step, err)
	if tail := s.stderr.String(); tail != "" {
		err = fmt.Errorf("%w; its stderr ends with: %s", err, tail)
	}
	return err
}

func (s *server) transport() (sdk.Transport, error) {
	switch s.cfg.Transport() {
	case TransportStdio:
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		policy := proc.EnvPolicy{Deny: s.m.opts.EnvDeny, Allow: s.m.opts.EnvAllow, Secrets: s.m.opts.Secrets}
		cmd.Env = policy.Filter(nil)
		for k, v := range s.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stderr io.Writer = s.stderr
		if s.m.opts.Stderr != nil {
			stderr = io.MultiWriter(s.stderr, s.m.opts.Stderr)
		}
		// A pipe of our own rather than an io.Writer: exec.Cmd.Wait would
		// otherwise wait for every process holding the server's stderr
		// (its children too) before it returns.
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("create the stderr pipe: %w", err)
		}
		s.stderrR, s.stderrW, s.stderrDone = pr, pw, make(chan struct{})
		go func() {
			defer close(s.stderrDone)
			_, _ = io.Copy(stderr, pr)
		}()
		cmd.Stderr = pw
		// Its own process group and a tag, so that Close can end what the
		// server started (npx starts node, which may start more).
		s.proc = proc.Adopt(cmd)
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}, nil
	case TransportHTTP:
		// The standalone SSE stream is where a streamable HTTP server
		// sends notifications/tools/list_changed (before the 2026
		// protocol's subscriptions); without it a server's new and removed
		// tools would go unseen.
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}, nil
	case TransportSSE:
		return &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", s.cfg.Type)
}

func (s *server) httpClient() *http.Client {
	base := s.m.opts.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	if len(s.cfg.Headers) == 0 {
		return base
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = headerTransport{base: rt, headers: s.cfg.Headers}
	return &c
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// watch notices a connection that ends without Close: the server exited.
func (s *server) watch(cs *sdk.ClientSession) {
	err := cs.Wait()
	s.mu.Lock()
	defer close(s.watched)
	if s.state != StateReady {
		s.mu.Unlock()
		return
	}
	if err == nil {
		err = errors.New("the connection ended")
	}
	s.state = StateExited
	s.mu.Unlock()
	s.sweep()
	s.drainStderr(stopTimeout)
	err = s.explain("server exited", context.Background(), err)
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.m.opts.Logger.Warn("mcp server exited; its tools are dropped", "server", s.name, "err", err)
}

// drainStderr waits, at most timeout, for the copier of a stdio server's
// stderr to reach the end, then stops it.
func (s *server) drainStderr(timeout time.Duration) {
	if s.stderrDone == nil {
		return
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.stderrDone:
	case <-t.C:
		s.stderrR.Close() // a process that escaped the sweep holds the pipe
		<-s.stderrDone
	}
	s.stderrR.Close()
}

// markExited records that a call found the connection closed.
func (s *server) markExited(err error) {
	s.mu.Lock()
	if s.state == StateReady {
		s.state, s.err = StateExited, s.explain("server exited", context.Background(), err)
	}
	s.mu.Unlock()
}

// sweep ends whatever a stdio server left running: processes carrying
// its tag, and members of its process group (which also collects their
// zombies once they were reparented here).
func (s *server) sweep() {
	if s.proc == nil {
		return
	}
	s.proc.Sweep(false, stopTimeout)
}

// errClosed is the cause of calls cancelled by Close.
var errClosed = errors.New("the MCP server was stopped")

func (s *server) close() {
	s.mu.Lock()
	cs, watched := s.session, s.watched
	if s.state == StateReady {
		s.state = StateClosed
	}
	calls := s.calls
	s.calls = nil
	s.mu.Unlock()
	// A graceful close waits for calls in flight: end them first.
	for _, cancel := range calls {
		cancel(errClosed)
	}
	if cs != nil {
		_ = cs.Close()
		<-watched
	}
	if s.cancelConn != nil {
		s.cancelConn()
	}
	s.sweep()
	s.drainStderr(stopTimeout)
}

// track registers an in-flight call so that close can cancel it. It
// returns false when the server is no longer ready.
func (s *server) track(cancel context.CancelCauseFunc) (untrack func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateReady {
		return nil, false
	}
	if s.calls == nil {
		s.calls = make(map[*int]context.CancelCauseFunc)
	}
	key := new(int)
	s.calls[key] = cancel
	return func() {
		s.mu.Lock()
		delete(s.calls, key)
		s.mu.Unlock()
	}, true
}

// Tools returns the tools of the servers that are ready, by server name
// and then in the order each server listed them. Tools of servers that
// failed or exited are left out.
func (m *Manager) Tools() []tool.Tool {
	var out []tool.Tool
	for _, s := range m.servers {
		s.mu.Lock()
		if s.state == StateReady {
			for _, t := range s.tools {
				out = append(out, t)
			}
		}
		s.mu.Unlock()
	}
	return out
}

// Status describes every configured server, sorted by name.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		st := ServerStatus{Name: s.name, Transport: s.cfg.Transport(), State: s.state, Err: s.err, Source: s.cfg.Source}
		for _, t := range s.tools {
			st.Tools = append(st.Tools, t.name)
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Close stops every server: stdio servers get their stdin closed, then
// SIGTERM, then are killed with everything they started; HTTP sessions
// are ended. It waits for all of them and is safe to call more than once.
func (m *Manager) Close() error {
	m.closed.Do(func() {
		var wg sync.WaitGroup
		for _, s := range m.servers {
			wg.Go(s.close)
		}
		wg.Wait()
	})
	return nil
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(string(w.buf))
}
