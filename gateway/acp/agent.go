package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

// Session is an ACP session as Config.Open and Config.Request see it.
type Session struct {
	// ID is the session's id in Config.Store, which is also its ACP
	// sessionId.
	ID string
	// Cwd is the absolute working directory the editor gave.
	Cwd string
	// MCP holds the MCP servers the editor passed (stdio and HTTP), to
	// start for every run of the session beside the caller's own.
	MCP mcp.Config
}

// Settings are what the editor chose for a session's next runs.
type Settings struct {
	// Mode is the approval mode: tool.ApprovalModeAsk, ApprovalModeAuto or
	// ApprovalModeNever.
	Mode string
	// Model is the model as provider/id ("" means the caller's default).
	Model string
	// Thinking is the level /thinking set ("" means the caller's default).
	Thinking llm.ThinkingLevel
}

// Run is one prompt's run, as Config.Request builds it.
type Run struct {
	// Request is the run. The agent sets its Prompt, Images, Session (its
	// Lock and Opened are kept) and OnEvent, and wraps its Approval: the Policy (nil means
	// tool.ApproveAuto) still decides first, and an ask goes to the editor.
	Request runner.Request
	// Done, when set, is called once the run has ended, to release what
	// the request holds (temporary directories).
	Done func()
}

// Config is what one connection serves. Store, Open and Request are
// required.
type Config struct {
	// Store keeps the sessions: session/new names one, session/load reads
	// one, session/list lists them.
	Store session.Store
	// Open returns the Runner of a session's runs, once per session of the
	// connection (new, loaded or resumed); it is closed when the session is
	// closed or the connection ends. A Runner per session lets each have
	// its own workspace hooks and the MCP servers the editor passed
	// (Session.MCP), which Runner-wide ToolSources carry.
	Open func(ctx context.Context, s Session) (*runner.Runner, error)
	// Release, when set, is called with a session and the Runner Open gave
	// it just before that Runner is closed: what the caller started on it
	// (a session's subagents) is stopped there.
	Release func(s Session, rn *runner.Runner)
	// Request builds the run of one prompt of s with the editor's settings.
	Request func(ctx context.Context, s Session, set Settings) (Run, error)
	// Compact runs the /compact command on a session that is not running;
	// its text is the reply. Nil leaves /compact out of the commands.
	Compact func(ctx context.Context, s Session, set Settings, instructions string) (string, error)
	// Models are offered to the editor as the model option, provider/id;
	// Model is the one a session starts on ("" is the first of Models, or
	// the caller's default).
	Models []string
	Model  string
	// Mode is the approval mode a session starts in; "" means ask.
	Mode string
	// Name and Version describe the agent in initialize.
	Name, Version string
	// Logger gets the connection's diagnostics; nil discards them.
	Logger *slog.Logger
}

// Serve speaks ACP as the agent over in (the editor's requests) and out
// (our responses and notifications) until in ends or ctx is done, then
// aborts what still runs and closes every session's Runner. The caller
// closes in to stop it (os.Stdin at the editor's exit; a pipe in tests).
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	if cfg.Store == nil || cfg.Open == nil || cfg.Request == nil {
		return errors.New("acp: Config.Store, Config.Open and Config.Request are required")
	}
	if cfg.Mode == "" {
		cfg.Mode = tool.ApprovalModeAsk
	}
	if _, err := tool.ApprovalPolicyFor(cfg.Mode); err != nil {
		return fmt.Errorf("acp: %w", err)
	}
	if cfg.Model == "" && len(cfg.Models) > 0 {
		cfg.Model = cfg.Models[0]
	}
	if cfg.Model != "" && len(cfg.Models) > 0 && !slices.Contains(cfg.Models, cfg.Model) {
		cfg.Models = append([]string{cfg.Model}, cfg.Models...)
	}
	a := &agent{cfg: cfg, sessions: map[string]*sess{}}
	// The connection reads (and dispatches, and logs) from the moment it
	// is made; nothing is read before its logger and a.conn are set.
	gate := make(chan struct{})
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &lockedWriter{w: out}
	in = newLineLimit(in, maxMessage, func(h *head, size int) {
		id, method := h.message()
		if id == nil {
			logger.Warn("acp: dropped a message longer than the SDK reads", "bytes", size, "method", method)
			return
		}
		_, _ = w.Write(tooLongError(id, method, size))
	})
	conn := sdk.NewAgentSideConnection(a, w, &gatedReader{r: in, gate: gate})
	conn.SetLogger(logger)
	a.conn = conn
	close(gate)
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	a.closeAll()
	return nil
}

// agent implements the SDK's Agent (and AgentLoader) for one connection.
type agent struct {
	cfg  Config
	conn *sdk.AgentSideConnection

	mu       sync.Mutex
	sessions map[string]*sess
	closed   bool
	prompts  sync.WaitGroup
}

var (
	_ sdk.Agent       = (*agent)(nil)
	_ sdk.AgentLoader = (*agent)(nil)
)

// gatedReader reads nothing until gate is closed.
type gatedReader struct {
	r    io.Reader
	gate chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

// closeAll aborts every prompt, waits for them, and closes the Runners.
func (a *agent) closeAll() {
	a.mu.Lock()
	a.closed = true
	all := make([]*sess, 0, len(a.sessions))
	for _, s := range a.sessions {
		all = append(all, s)
	}
	a.sessions = map[string]*sess{}
	a.mu.Unlock()
	for _, s := range all {
		s.cancel()
	}
	a.prompts.Wait()
	for _, s := range all {
		s.closeRunner()
	}
}

// closeRunner closes the session's Runner, released first (Config.Release).
func (s *sess) closeRunner() {
	if s.a.cfg.Release != nil {
		s.a.cfg.Release(s.info, s.runner)
	}
	s.runner.Close()
}

func (a *agent) Initialize(_ context.Context, _ sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	name, version := a.cfg.Name, a.cfg.Version
	if name == "" {
		name = "agentloop"
	}
	if version == "" {
		version = "dev"
	}
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  sdk.PromptCapabilities{Image: true, EmbeddedContext: true},
			McpCapabilities:     sdk.McpCapabilities{Http: true},
			SessionCapabilities: sdk.SessionCapabilities{List: &sdk.SessionListCapabilities{}, Close: &sdk.SessionCloseCapabilities{}, Resume: &sdk.SessionResumeCapabilities{}},
		},
		AgentInfo:   &sdk.Implementation{Name: name, Version: version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate has nothing to do: the providers' keys are the caller's.
func (a *agent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (a *agent) Logout(context.Context, sdk.LogoutRequest) (sdk.LogoutResponse, error) {
	return sdk.LogoutResponse{}, nil
}

// NewSession names a new session, created with its first prompt; with
// _meta {"agentloop": {"session": ID}} it opens that existing session
// instead (OpenClaw's _meta.sessionKey), without replaying it. Other
// _meta keys are ignored.
func (a *agent) NewSession(ctx context.Context, req sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	var s *sess
	var err error
	if id := metaSession(req.Meta); id != "" {
		s, _, err = a.reopen(ctx, sdk.SessionId(id), req.Cwd, req.McpServers)
	} else {
		s, err = a.open(ctx, session.NewSessionID(), req.Cwd, req.McpServers, false)
	}
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.info.ID), Modes: s.modes(), ConfigOptions: s.configOptions()}, nil
}

// LoadSession replays the transcript as updates, then answers: the editor
// shows the conversation before it may prompt again.
func (a *agent) LoadSession(ctx context.Context, req sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	s, tr, err := a.reopen(ctx, req.SessionId, req.Cwd, req.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	out := s.sender(ctx)
	replay(out, tr, s.info.Cwd)
	s.sendCommands(out)
	return sdk.LoadSessionResponse{Modes: s.modes(), ConfigOptions: s.configOptions()}, nil
}

// ResumeSession is session/load without the replay.
func (a *agent) ResumeSession(ctx context.Context, req sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	s, _, err := a.reopen(ctx, req.SessionId, req.Cwd, req.McpServers)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	return sdk.ResumeSessionResponse{Modes: s.modes(), ConfigOptions: s.configOptions()}, nil
}

// reopen opens an existing session of the store on this connection, in
// cwd ("" for the one it was created in).
func (a *agent) reopen(ctx context.Context, id sdk.SessionId, cwd string, servers []sdk.McpServer) (*sess, *session.Transcript, error) {
	// The editor names a session by the id the agent gave it, never by a
	// path (the store would read any file) or a prefix (some other
	// session); the CLI's --session keeps those for people.
	if strings.ContainsAny(string(id), `/\`) || strings.HasPrefix(string(id), ".") || strings.HasSuffix(string(id), ".jsonl") {
		return nil, nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %s: a session id, not a path", id)})
	}
	tr, err := a.cfg.Store.Load(ctx, string(id))
	if errors.Is(err, session.ErrNotFound) || err == nil && tr.Header.ID != string(id) {
		return nil, nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %s", id)})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load session %s: %w", id, err)
	}
	s, err := a.open(ctx, tr.Header.ID, orString(cwd, tr.Header.Cwd), servers, true)
	return s, tr, err
}

func (a *agent) ListSessions(ctx context.Context, req sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	cwd := ""
	if req.Cwd != nil {
		cwd = *req.Cwd
	}
	infos, err := a.cfg.Store.List(ctx, cwd)
	if err != nil {
		return sdk.ListSessionsResponse{}, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]sdk.SessionInfo, 0, len(infos))
	for _, in := range infos {
		if in.Err != nil {
			continue
		}
		si := sdk.SessionInfo{SessionId: sdk.SessionId(in.ID), Cwd: in.Cwd}
		if !in.Updated.IsZero() {
			si.UpdatedAt = sdk.Ptr(in.Updated.UTC().Format(time.RFC3339))
		}
		out = append(out, si)
	}
	return sdk.ListSessionsResponse{Sessions: out}, nil
}

func (a *agent) CloseSession(_ context.Context, req sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[string(req.SessionId)]
	delete(a.sessions, string(req.SessionId))
	a.mu.Unlock()
	if s != nil {
		s.cancel()
		s.wait()
		s.closeRunner()
	}
	return sdk.CloseSessionResponse{}, nil
}

func (a *agent) Cancel(_ context.Context, n sdk.CancelNotification) error {
	if s := a.session(n.SessionId); s != nil {
		s.cancel()
	}
	return nil
}

func (a *agent) SetSessionMode(_ context.Context, req sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s := a.session(req.SessionId)
	if s == nil {
		return sdk.SetSessionModeResponse{}, unknownSession(req.SessionId)
	}
	if err := s.setMode(string(req.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	return sdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption sets the mode or the model: ACP v1's
// session/set_model became the "model" config option.
func (a *agent) SetSessionConfigOption(_ context.Context, req sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := req.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "agentloop's options take a value id"})
	}
	s := a.session(v.SessionId)
	if s == nil {
		return sdk.SetSessionConfigOptionResponse{}, unknownSession(v.SessionId)
	}
	var err error
	switch v.ConfigId {
	case configMode:
		err = s.setMode(string(v.Value))
	case configModel:
		err = s.setModel(string(v.Value))
	default:
		err = sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no option %q", v.ConfigId)})
	}
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions()}, nil
}

func unknownSession(id sdk.SessionId) error {
	return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %s on this connection: session/new or session/load it first", id)})
}

func (a *agent) session(id sdk.SessionId) *sess {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[string(id)]
}

// open makes the session of this connection, with its Runner. A session
// loaded again replaces its earlier self, which must be idle.
func (a *agent) open(ctx context.Context, id, cwd string, servers []sdk.McpServer, exists bool) (*sess, error) {
	if !filepath.IsAbs(cwd) {
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not an absolute path", cwd)})
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not a directory", cwd)})
	}
	cfg, err := mcpConfig(servers)
	if err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	info := Session{ID: id, Cwd: filepath.Clean(cwd), MCP: cfg}
	a.mu.Lock()
	err = a.replaceableLocked(id)
	a.mu.Unlock()
	if err != nil {
		return nil, err // before Open, which may start MCP servers
	}
	rn, err := a.cfg.Open(ctx, info)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	s := &sess{a: a, info: info, runner: rn, exists: exists,
		set:         Settings{Mode: a.cfg.Mode, Model: a.cfg.Model},
		allowAlways: map[string]bool{}, rejectAlways: map[string]bool{}, active: map[*promptRun]struct{}{}}
	// Decided again at the swap: a prompt, a close or another load of the
	// session may have come while Open ran. The check and the swap are one
	// step under a.mu, as a prompt's claim of its session is (Prompt).
	a.mu.Lock()
	old := a.sessions[id]
	if err = a.replaceableLocked(id); err == nil {
		a.sessions[id] = s
	}
	a.mu.Unlock()
	if err != nil {
		s.closeRunner()
		return nil, err
	}
	if old != nil {
		old.closeRunner()
	}
	return s, nil
}

// replaceableLocked says whether the session id may be (re)opened now: not
// while the connection closes, nor while a prompt of it runs. a.mu is held.
func (a *agent) replaceableLocked(id string) error {
	if a.closed {
		return errors.New("the connection is closing")
	}
	if old := a.sessions[id]; old != nil && old.claims > 0 {
		return sdk.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("session %s is running a prompt", id)})
	}
	return nil
}

// mcpConfig converts the editor's MCP servers to ours. SSE servers are
// refused: initialize does not offer them.
func mcpConfig(servers []sdk.McpServer) (mcp.Config, error) {
	cfg := mcp.Config{Servers: map[string]mcp.ServerConfig{}}
	for _, s := range servers {
		var name string
		var sc mcp.ServerConfig
		switch {
		case s.Stdio != nil:
			name = s.Stdio.Name
			sc = mcp.ServerConfig{Type: "stdio", Command: s.Stdio.Command, Args: s.Stdio.Args, Source: "editor"}
			if len(s.Stdio.Env) > 0 {
				sc.Env = map[string]string{}
				for _, e := range s.Stdio.Env {
					sc.Env[e.Name] = e.Value
				}
			}
		case s.Http != nil:
			name = s.Http.Name
			sc = mcp.ServerConfig{Type: "http", URL: s.Http.Url, Source: "editor"}
			if len(s.Http.Headers) > 0 {
				sc.Headers = map[string]string{}
				for _, h := range s.Http.Headers {
					sc.Headers[h.Name] = h.Value
				}
			}
		case s.Sse != nil:
			return mcp.Config{}, fmt.Errorf("MCP server %q: SSE servers are not supported (use stdio or HTTP)", s.Sse.Name)
		default:
			return mcp.Config{}, errors.New("an MCP server of an unknown transport")
		}
		if name == "" {
			return mcp.Config{}, errors.New("an MCP server without a name")
		}
		if sc.Command == "" && sc.URL == "" {
			return mcp.Config{}, fmt.Errorf("MCP server %q has no command (stdio) or url (HTTP)", name)
		}
		if _, dup := cfg.Servers[name]; dup {
			return mcp.Config{}, fmt.Errorf("two MCP servers are called %q", name)
		}
		cfg.Servers[name] = sc
	}
	return cfg, nil
}

// metaSession is _meta.agentloop.session, "" when absent.
func metaSession(meta map[string]any) string {
	ours, _ := meta["agentloop"].(map[string]any)
	id, _ := ours["session"].(string)
	return id
}

func orString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
