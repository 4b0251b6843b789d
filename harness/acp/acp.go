// Package acp is the harness that runs an attempt on any ACP v1 agent
// (agentloop's own `agentloop acp`, claude-code-acp, codex-acp, ...),
// started as a subprocess and driven from the client side of
// github.com/coder/acp-go-sdk: initialize (no file system or terminal
// offered: the agent uses its own), session/new or session/resume (the
// session id is the binding), session/prompt. Session updates become our
// events and mirrored items; session/request_permission is answered with
// the run's approval; an abort is session/cancel, the pending permissions
// answered cancelled, and a wait of at most AbortWait for the prompt's
// answer before the process tree is killed.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/internal/jsonl"
	"github.com/agentloop/agentloop/harness/internal/toolserver"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// AbortWait bounds the wait for a cancelled prompt's answer.
const AbortWait = 10 * time.Second

// DefaultIdleWarn is how long a prompt may go without an update or an
// answer from the agent before the user is warned (Config.IdleWarn).
const DefaultIdleWarn = 5 * time.Minute

// Config says how to start the agent.
type Config struct {
	// Name makes the harness id "acp:<Name>"; "" means the command's base.
	Name string
	// Command and Args start the agent; Env is its environment (nil: ours).
	Command string
	Args    []string
	Env     []string
	// IdleWarn: a prompt turn that gets no session update, no permission
	// request and no answer for this long sends a warning (once per quiet
	// stretch), never a silent hang; the turn goes on. 0 is
	// DefaultIdleWarn. A permission question waiting on our side is not
	// the agent's silence.
	IdleWarn time.Duration
	// Bridge, when set, is the command line (command, then arguments) of
	// a process that serves the run's tools over stdio MCP by calling
	// ServeBridge: an agent that takes no HTTP MCP servers gets it as a
	// stdio server, with the tool server's URL and token in its
	// environment. nil offers such an agent none of our tools. The CLI
	// sets it to its own executable ("agentloop mcp-bridge").
	Bridge []string
}

// Harness runs attempts on one ACP agent.
type Harness struct{ cfg Config }

// New returns the harness for cfg.
func New(cfg Config) *Harness {
	if cfg.Name == "" {
		cfg.Name = baseName(cfg.Command)
	}
	return &Harness{cfg: cfg}
}

// Parse reads "acp:<command line>" (words split on spaces) into a Config.
func Parse(spec string) (Config, error) {
	line, ok := strings.CutPrefix(spec, "acp:")
	words := strings.Fields(line)
	if !ok || len(words) == 0 {
		return Config{}, fmt.Errorf("%q: want acp:<command> [args...]", spec)
	}
	return Config{Command: words[0], Args: words[1:]}, nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// ID returns "acp:<name>".
func (h *Harness) ID() string { return "acp:" + h.cfg.Name }

// Supports claims nothing by itself: an ACP agent is chosen by name.
func (h *Harness) Supports(context.Context, harness.Route) harness.Support {
	return harness.Support{Reason: "chosen by name only"}
}

// RunAttempt runs one prompt turn.
func (h *Harness) RunAttempt(ctx context.Context, a *harness.Attempt) (*harness.Result, error) {
	if _, err := exec.LookPath(h.cfg.Command); err != nil {
		return nil, &harness.PreflightError{Harness: h.ID(), Err: err}
	}
	dir := a.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	p, err := jsonl.StartProc(h.cfg.Command, h.cfg.Args, dir, h.cfg.Env)
	if err != nil {
		return nil, &harness.PreflightError{Harness: h.ID(), Err: err}
	}
	c := &client{h: h, a: a, m: harness.NewMirror(a), tracker: &harness.Tracker{}, res: &harness.Result{},
		calls: map[string]*call{}, approved: map[string]int{}, allowedIDs: map[string]bool{}, gated: map[string]bool{}, cancelled: make(chan struct{})}
	conn := acpsdk.NewClientSideConnection(c, p.Stdin, p.Stdout)
	// The library's diagnostics ("connection closed" at every attempt's
	// end) are not the user's business; what matters reaches them as errors.
	conn.SetLogger(slog.New(slog.DiscardHandler))
	err = c.run(ctx, conn, dir)
	if err != nil && c.sessionID == "" {
		_ = p.Wait(time.Second, nil)
		var lost *harness.BindingLostError
		if errors.As(err, &lost) {
			return nil, err
		}
		return nil, &harness.PreflightError{Harness: h.ID(), Err: fmt.Errorf("%w %s", err, strings.TrimSpace(p.Stderr()))}
	}
	// One process per attempt: the session lives on in the agent's own
	// store. Closing its stdin ends it; what does not end is killed.
	_ = p.Wait(2*time.Second, conn.Done())
	res := c.finish()
	if err != nil && res.Err == nil {
		res.Err = err
	}
	if res.Err != nil && res.StopReason == "" {
		res.StopReason = llm.StopReasonError
	}
	if ctx.Err() != nil {
		res.StopReason, res.Err = llm.StopReasonAborted, ctx.Err()
	}
	return res, nil
}

// call is one native tool call.
type call struct {
	name     string
	kind     acpsdk.ToolKind
	args     json.RawMessage
	started  bool
	refused  bool
	finished bool
	// native and judged are the call as the run's policy, rules and hooks
	// see it: our tool and arguments (harness.ACPCall).
	native harness.NativeTool
	judged json.RawMessage
}

// client is the client side of one attempt's connection.
type client struct {
	h       *Harness
	a       *harness.Attempt
	m       *harness.Mirror
	tracker *harness.Tracker

	mu        sync.Mutex
	res       *harness.Result
	sessionID string
	text      strings.Builder
	texts     int
	calls     map[string]*call
	err       error
	cancelled chan struct{}
	cancelMu  sync.Once
	// last is when the agent last showed life; asking counts the
	// permission questions waiting on us (the watchdog waits too).
	last   time.Time
	asking int
	// approved counts, by canonical arguments, the permission requests we
	// allowed that no MCP call of our tools has used yet.
	approved map[string]int
	// allowedIDs are the calls our approval let through: their ends go to
	// AfterTool.
	allowedIDs map[string]bool
	// gated are the agent's calls an MCP call of our tools was paired
	// with (gateIDLocked); gateCalls counts those paired with none.
	gated     map[string]bool
	gateCalls int
	// deniedIDs say why the run's tool policy refused a call, for its
	// result (the agent cannot pass a reason on).
	deniedIDs map[string]string
}

// alive records a sign of life from the agent.
func (c *client) alive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = time.Now()
}

// quiet returns how long the agent has been silent, 0 while a permission
// question is ours to answer.
func (c *client) quiet() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asking > 0 {
		return 0
	}
	return time.Since(c.last)
}

func (c *client) run(ctx context.Context, conn *acpsdk.ClientSideConnection, dir string) error {
	bg := context.WithoutCancel(ctx)
	init, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientInfo: &acpsdk.Implementation{Name: "agentloop", Version: "0"}})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	servers, ts, err := c.offerTools(init.AgentCapabilities.McpCapabilities)
	if err != nil {
		return err
	}
	defer ts.Close()
	if b := c.a.Binding; b != nil {
		var err error
		switch caps := init.AgentCapabilities; {
		case caps.SessionCapabilities.Resume != nil:
			_, err = conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(b.NativeID), Cwd: dir, McpServers: servers})
		case caps.LoadSession:
			_, err = conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(b.NativeID), Cwd: dir, McpServers: servers})
		default:
			err = errors.New("the agent can neither resume nor load a session")
		}
		if err != nil {
			return &harness.BindingLostError{Harness: c.h.ID(), NativeID: b.NativeID, SessionID: c.a.SessionID, Err: err}
		}
		c.setSession(b.NativeID)
	} else {
		s, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, McpServers: servers})
		if err != nil {
			return fmt.Errorf("session/new: %w", err)
		}
		c.setSession(string(s.SessionId))
	}
	c.res.Binding = &harness.Binding{Harness: c.h.ID(), NativeID: c.session(), Cwd: c.a.Cwd}
	if init.AgentInfo != nil {
		c.res.Binding.Version = init.AgentInfo.Version
	}
	prompt := c.a.Prompt.Text()
	if c.a.Continuation != nil {
		prompt = "Continue the previous request where it stopped; do not run again the tools that already finished.\n\n" + prompt
	} else {
		c.mu.Lock()
		err := c.m.Add(ctx, harness.Item{MirrorID: c.id("user"), Message: c.a.Prompt}, true)
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	type answer struct {
		r   acpsdk.PromptResponse
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := conn.Prompt(bg, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(c.session()), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(prompt)}})
		done <- answer{r, err}
	}()
	idle := c.h.cfg.IdleWarn
	if idle <= 0 {
		idle = DefaultIdleWarn
	}
	c.alive()
	watch := time.NewTimer(idle)
	defer watch.Stop()
	warned := false
	var ans answer
wait:
	for {
		select {
		case ans = <-done:
			break wait
		case <-conn.Done():
			ans = answer{err: errors.New("the agent closed the connection")}
			break wait
		case <-watch.C:
			q := c.quiet()
			switch {
			case q < idle:
				warned = false // it spoke since: a new quiet stretch starts
				watch.Reset(idle - q)
			case !warned:
				warned = true
				if c.a.Warn != nil {
					c.a.Warn(fmt.Sprintf("%s: no update and no answer from the agent for %s; it may be stuck (the turn goes on: interrupt to abort it)",
						c.h.ID(), roundDur(q)))
				}
				watch.Reset(idle)
			default:
				watch.Reset(idle)
			}
		case <-ctx.Done():
			c.cancelMu.Do(func() { close(c.cancelled) }) // pending permissions answer cancelled
			_ = conn.Cancel(bg, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(c.session())})
			select {
			case ans = <-done:
			case <-conn.Done():
			case <-time.After(AbortWait):
			}
			break wait
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked(ctx)
	switch {
	case ctx.Err() != nil:
	case ans.err != nil:
		c.res.Err = &harness.Error{Harness: c.h.ID(), Reason: "disconnected", Err: ans.err}
		c.res.SideEffects = true // what the agent did before it went is unknown
	case ans.r.StopReason == acpsdk.StopReasonRefusal:
		c.res.Err = &harness.Error{Harness: c.h.ID(), Reason: "refusal", Err: errors.New("the agent refused the prompt")}
	default:
		c.res.StopReason = llm.StopReasonStop
		if ans.r.StopReason == acpsdk.StopReasonMaxTokens {
			c.res.StopReason = llm.StopReasonLength
		}
	}
	if u := ans.r.Usage; u != nil {
		c.res.Usage.Add(llm.Usage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens})
	}
	return nil
}

// offerTools serves the run's tools to the agent: as an HTTP MCP server
// to one that accepts those (mcpCapabilities.http), else, when there is a
// Config.Bridge, as a stdio server that is that bridge process (every ACP
// agent takes stdio servers); otherwise none.
func (c *client) offerTools(caps acpsdk.McpCapabilities) ([]acpsdk.McpServer, *toolserver.Server, error) {
	servers := []acpsdk.McpServer{}
	bridge := c.h.cfg.Bridge
	if !caps.Http && len(bridge) == 0 {
		return servers, nil, nil
	}
	ts, err := toolserver.Serve(c.a.Tools, c.gate)
	if err != nil || ts == nil {
		if err != nil {
			err = fmt.Errorf("serve the run's tools: %w", err)
		}
		return servers, nil, err
	}
	if !caps.Http {
		servers = append(servers, acpsdk.McpServer{Stdio: &acpsdk.McpServerStdio{Name: toolserver.Name, Command: bridge[0], Args: append([]string{}, bridge[1:]...),
			Env: []acpsdk.EnvVariable{{Name: EnvBridgeURL, Value: ts.URL}, {Name: EnvBridgeToken, Value: ts.Token}}}})
		return servers, ts, nil
	}
	servers = append(servers, acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: toolserver.Name, Url: ts.URL,
		Headers: []acpsdk.HttpHeader{{Name: "Authorization", Value: "Bearer " + ts.Token}}}})
	return servers, ts, nil
}

// gate judges a call of one of our tools the agent makes over MCP: a call
// whose arguments the agent's permission request already had approved
// runs (that answer is used up, and the agent's call reports its end); any
// other is put to the run's approval under our tool's name, since an agent
// need not ask before MCP calls, and its end goes to AfterTool
// (PostToolUse) from here, where the tool ran.
func (c *client) gate(ctx context.Context, call tool.Call) (bool, string, func(context.Context, tool.Result)) {
	key := canonical(call.Args)
	c.mu.Lock()
	if c.approved[key] > 0 {
		c.approved[key]--
		c.mu.Unlock()
		return true, "", nil
	}
	call.ID = c.gateIDLocked(key)
	c.mu.Unlock()
	ok, reason := c.a.ApproveAsAsked(ctx, call) // the MCP server runs the call as the agent made it
	if !ok {
		c.mu.Lock()
		if cl := c.calls[call.ID]; cl != nil {
			cl.refused = true // the agent's call of it did not run
		}
		c.mu.Unlock()
		return false, reason, nil
	}
	return true, "", func(ctx context.Context, res tool.Result) {
		// Not the MCP request's context: a PostToolUse script may outlast it.
		c.a.ToolDone(context.WithoutCancel(ctx), call, res, true)
	}
}

// gateIDLocked names an MCP call of our tools for the hooks: the id of the
// agent's own announced call with the same arguments, when it is there and
// unfinished (the announcement travels on another stream and may come
// later), else one of ours.
func (c *client) gateIDLocked(key string) string {
	for id, cl := range c.calls {
		if !cl.finished && !c.gated[id] && canonical(cl.args) == key {
			c.gated[id] = true
			return id
		}
	}
	c.gateCalls++
	return "agentloop-mcp-" + strconv.Itoa(c.gateCalls)
}

// canonical is JSON with its object keys sorted, so equal arguments
// compare equal.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (c *client) setSession(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessionID = id
}

func (c *client) session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// id is the mirror id of an item of this turn.
func (c *client) id(item string) string {
	return harness.MirrorID(c.h.ID(), c.sessionID, c.a.RunID, item)
}

func (c *client) emit(ev agent.Event) {
	if c.a.Emit != nil {
		c.a.Emit(ev)
	}
}

// add mirrors msg; c.mu is held.
func (c *client) addLocked(ctx context.Context, item string, msg llm.Message) {
	if err := c.m.Add(ctx, harness.Item{MirrorID: c.id(item), Message: msg}, false); err != nil && c.err == nil {
		c.err = err
	}
	harness.EmitMessage(c.a.Emit, msg)
}

// flushLocked ends the assistant text streamed so far as one message.
func (c *client) flushLocked(ctx context.Context) {
	if c.text.Len() == 0 {
		return
	}
	msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(c.text.String())}, Provider: c.h.ID(),
		StopReason: llm.StopReasonStop, Timestamp: llm.NowMillis()}
	c.text.Reset()
	c.texts++
	c.addLocked(ctx, "text-"+strconv.Itoa(c.texts), msg)
}

func (c *client) finish() *harness.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.res
	res.Items = c.m.Items()
	res.PromptPersisted = c.m.PromptPersisted
	if res.Err == nil && c.err != nil {
		res.Err = c.err
	}
	// A call the agent never ended keeps its pair: an error result.
	for id, cl := range c.calls {
		if !cl.finished {
			c.resultLocked(context.Background(), id, cl, "the call did not finish", true)
		}
	}
	res.Items = c.m.Items()
	var own []llm.Message
	for _, it := range res.Items {
		own = append(own, it.Message)
	}
	res.Settled = res.Err == nil && harness.Settled(own)
	return res
}

// SessionUpdate maps the agent's updates to items and events.
func (c *client) SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = time.Now()
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			c.text.WriteString(t.Text)
		}
	case u.ToolCall != nil:
		c.flushLocked(ctx)
		tc := u.ToolCall
		id := string(tc.ToolCallId)
		if _, seen := c.calls[id]; seen {
			return nil // re-announced: the mirror has it
		}
		args, _ := json.Marshal(tc.RawInput)
		if tc.RawInput == nil {
			args = json.RawMessage(`{}`)
		}
		cl := &call{name: orStr(tc.Title, string(tc.Kind)), kind: tc.Kind, args: args}
		cl.native, cl.judged = harness.ACPCall(string(tc.Kind), tc.Title, args, locationPaths(tc.Locations))
		c.calls[id] = cl
		msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall(id, cl.name, args)}, Provider: c.h.ID(),
			StopReason: llm.StopReasonToolUse, Timestamp: llm.NowMillis()}
		c.addLocked(ctx, "call-"+id, msg)
		c.emit(agent.Event{Type: agent.EventToolExecutionStart, ToolCallID: id, ToolName: cl.name, Args: args})
		c.statusLocked(ctx, id, cl, tc.Status, tc.Content)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		id := string(tu.ToolCallId)
		cl := c.calls[id]
		if cl == nil || tu.Status == nil {
			return nil
		}
		c.statusLocked(ctx, id, cl, *tu.Status, tu.Content)
	}
	return nil
}

func (c *client) statusLocked(ctx context.Context, id string, cl *call, st acpsdk.ToolCallStatus, content []acpsdk.ToolCallContent) {
	switch st {
	case acpsdk.ToolCallStatusInProgress:
		cl.started = true
	case acpsdk.ToolCallStatusCompleted, acpsdk.ToolCallStatusFailed:
		if st == acpsdk.ToolCallStatusCompleted {
			cl.started = true
		}
		c.resultLocked(ctx, id, cl, contentText(content), st == acpsdk.ToolCallStatusFailed)
	}
}

// readOnlyKinds change nothing.
var readOnlyKinds = map[acpsdk.ToolKind]bool{acpsdk.ToolKindRead: true, acpsdk.ToolKindSearch: true,
	acpsdk.ToolKindThink: true, acpsdk.ToolKindFetch: true}

// resultLocked mirrors a call's end and reports it.
func (c *client) resultLocked(ctx context.Context, id string, cl *call, text string, failed bool) {
	if cl.finished {
		return
	}
	cl.finished = true
	if why := c.deniedIDs[id]; why != "" && failed {
		text = why // the agent could not be told why
	}
	started := cl.started && !cl.refused
	mutating := !readOnlyKinds[cl.kind]
	if started && mutating {
		c.res.SideEffects = true
	}
	rm := llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: cl.name, IsError: failed,
		Content: []llm.Content{llm.Text(text)}, Timestamp: llm.NowMillis()}
	c.addLocked(ctx, "result-"+id, rm)
	r := harness.ToolTerminal{CallID: id, Name: cl.name, Args: cl.args, ExecutionStarted: started, Outcome: harness.OutcomeSuccess, Mutating: mutating}
	if failed {
		r.Outcome, r.Error = harness.OutcomeFailure, text
	}
	observe := c.a.ObserveToolTerminal
	if observe == nil {
		observe = c.tracker.Observe
	}
	c.res.LastToolError = observe(r).LastToolError
	res := tool.Result{Content: rm.Content, IsError: failed}
	if c.allowedIDs[id] {
		// Not the notification's context: the SDK may end it before a
		// PostToolUse hook script is done.
		// Under the name and arguments it was approved by (PostToolUse
		// hooks see what PreToolUse saw).
		c.a.ToolDone(context.WithoutCancel(ctx), tool.Call{ID: id, Name: orStr(cl.native.Tool, cl.name), Args: cl.judged}, res, started)
	}
	c.emit(agent.Event{Type: agent.EventToolExecutionEnd, ToolCallID: id, ToolName: cl.name, Args: cl.args, Result: &res})
}

// RequestPermission answers with the run's approval; cancelled once the
// turn is.
func (c *client) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	cancelled := acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{}}}
	select {
	case <-c.cancelled:
		return cancelled, nil
	default:
	}
	id := string(p.ToolCall.ToolCallId)
	c.mu.Lock()
	c.asking++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.asking--
		c.last = time.Now() // the agent resumes from our answer
		c.mu.Unlock()
	}()
	c.mu.Lock()
	cl := c.calls[id]
	name := ""
	var args, judged json.RawMessage
	var native harness.NativeTool
	if cl != nil {
		name, args, native, judged = cl.name, cl.args, cl.native, cl.judged
	}
	c.mu.Unlock()
	if p.ToolCall.Title != nil {
		name = orStr(name, *p.ToolCall.Title)
	}
	if args == nil {
		args, _ = json.Marshal(p.ToolCall.RawInput)
	}
	if native.Name == "" { // not announced yet: judged by the request itself
		kind := ""
		if k := p.ToolCall.Kind; k != nil {
			kind = string(*k)
		}
		native, judged = harness.ACPCall(kind, name, args, locationPaths(p.ToolCall.Locations))
	}
	// A call whose counterpart the run's tool policy leaves out is refused
	// before the hooks and the approval; the others are judged as the
	// tool of ours they are (bash for an execute), so that permission
	// rules, the read-only classifier and hooks see our names.
	allow, denied := c.a.ToolAllowed(native)
	if allow && (c.a.Approval != nil || c.a.BeforeTool != nil) {
		type verdict struct{ ok bool }
		ch := make(chan verdict, 1)
		go func() {
			ok, _ := c.a.ApproveAsAsked(ctx, tool.Call{ID: id, Name: orStr(native.Tool, name), Args: judged})
			ch <- verdict{ok}
		}()
		select {
		case v := <-ch:
			allow = v.ok
		case <-c.cancelled:
			return cancelled, nil
		}
	}
	want := []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindRejectOnce, acpsdk.PermissionOptionKindRejectAlways}
	if allow {
		want = []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindAllowOnce, acpsdk.PermissionOptionKindAllowAlways}
		c.mu.Lock()
		c.approved[canonical(args)]++
		// By id: the call's own announcement may not be handled yet (the
		// SDK runs requests beside the notification queue).
		c.allowedIDs[id] = true
		c.mu.Unlock()
	} else {
		c.mu.Lock()
		if cl != nil {
			cl.refused = true
		}
		if denied != "" {
			if c.deniedIDs == nil {
				c.deniedIDs = map[string]string{}
			}
			c.deniedIDs[id] = denied
		}
		c.mu.Unlock()
	}
	for _, k := range want {
		for _, o := range p.Options {
			if o.Kind == k {
				return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
			}
		}
	}
	return cancelled, nil // no option says what we decided
}

// The client offers no file system and no terminal (initialize says so).
var errNotOffered = errors.New("agentloop does not offer this to ACP agents")

func (c *client) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errNotOffered
}

func (c *client) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errNotOffered
}

func (c *client) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errNotOffered
}

func (c *client) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errNotOffered
}

func (c *client) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errNotOffered
}

func (c *client) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errNotOffered
}

func (c *client) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errNotOffered
}

// locationPaths are the paths of a call's locations.
func locationPaths(ls []acpsdk.ToolCallLocation) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Path)
	}
	return out
}

func contentText(cs []acpsdk.ToolCallContent) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text)
		}
	}
	return b.String()
}

// roundDur rounds a quiet stretch for a person to read.
func roundDur(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
