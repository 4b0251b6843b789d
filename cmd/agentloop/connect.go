package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/cmd/agentloop/internal/tui"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/sse"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/tool"
)

// gatewayBackend is the chat's Backend over a gateway (agentloop serve,
// docs/gateway.md): runs are POSTs, the events come on the session's SSE
// stream, approvals are answered with POST /v1/approvals/{id}. The model
// code is the chat's, unchanged.
type gatewayBackend struct {
	base, token string
	client      *http.Client
	sendMsg     func(tea.Msg)
	approver    *tui.Approver

	mu       sync.Mutex
	session  string
	model    string
	run      string // the active run's id
	approve  string
	stream   context.CancelFunc
	streams  sync.WaitGroup
	approves sync.WaitGroup // approvals waiting, and aborts in flight
	pending  map[string]context.CancelFunc
}

type gwError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call sends a JSON request and decodes the answer into out (nil: drop it).
func (g *gatewayBackend) call(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.base+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if g.token != "" {
		req.Header.Set("Authorization", "Bearer "+g.token)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		var e gwError
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return resp.StatusCode, fmt.Errorf("%s: %s", e.Error.Code, e.Error.Message)
		}
		return resp.StatusCode, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

// open creates a session (id "") or checks one, and follows its events.
func (g *gatewayBackend) open(ctx context.Context, id, cwd, model string) error {
	var s struct {
		ID    string `json:"id"`
		Model string `json:"model"`
	}
	var err error
	if id == "" {
		in := map[string]string{"cwd": cwd}
		if model != "" {
			in["model"] = model
		}
		_, err = g.call(ctx, "POST", "/v1/sessions", in, &s)
	} else {
		_, err = g.call(ctx, "GET", "/v1/sessions/"+id, nil, &s)
	}
	if err != nil {
		return fmt.Errorf("gateway %s: %w", g.base, err)
	}
	g.mu.Lock()
	if g.stream != nil {
		g.stream()
	}
	sctx, cancel := context.WithCancel(ctx)
	g.session, g.model, g.run, g.stream = s.ID, s.Model, "", cancel
	g.mu.Unlock()
	g.streams.Add(1)
	go g.follow(sctx, s.ID)
	return nil
}

// follow reads the session's events, live, until ctx ends.
func (g *gatewayBackend) follow(ctx context.Context, id string) {
	defer g.streams.Done()
	req, err := http.NewRequestWithContext(ctx, "GET", g.base+"/v1/sessions/"+id+"/events", nil)
	if err != nil {
		g.sendMsg(tui.RunErrorMsg{Err: err})
		return
	}
	if g.token != "" {
		req.Header.Set("Authorization", "Bearer "+g.token)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			g.sendMsg(tui.RunErrorMsg{Err: fmt.Errorf("the gateway's event stream: %w", err)})
		}
		return
	}
	defer resp.Body.Close()
	r := sse.NewReader(resp.Body)
	for {
		ev, err := r.Next()
		if err != nil {
			if ctx.Err() == nil {
				g.sendMsg(tui.RunErrorMsg{Err: fmt.Errorf("the gateway's event stream ended: %v", err)})
			}
			return
		}
		if len(ev.Data) == 0 {
			continue
		}
		g.dispatch(ctx, ev.Data)
	}
}

// wireEvent is the part of a protocol v2 line (docs/protocol.md) the chat
// shows; the rest is left unread.
type wireEvent struct {
	Type       agent.EventType `json:"type"`
	RunID      string          `json:"runId"`
	SessionID  string          `json:"sessionId"`
	Turn       int             `json:"turn"`
	Message    *llm.Message    `json:"message"`
	Event      llm.EventType   `json:"event"`
	Delta      string          `json:"delta"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Args       json.RawMessage `json:"args"`
	Partial    *struct {
		Content []llm.Content `json:"content"`
	} `json:"partial"`
	Result *struct {
		Content []llm.Content `json:"content"`
	} `json:"result"`
	IsError bool       `json:"isError"`
	Reason  string     `json:"reason"`
	Usage   *llm.Usage `json:"usage"`
	Model   string     `json:"model"`
	Text    string     `json:"text"`
	Error   string     `json:"error"`

	// approval_requested, approval_resolved.
	ApprovalID string `json:"approvalId"`
	Decision   string `json:"decision"`
}

// event turns a line into the runner.Event the chat's reducer reads.
func (w *wireEvent) event() runner.Event {
	ev := runner.Event{Type: w.Type, RunID: w.RunID, SessionID: w.SessionID}
	a := &agent.Event{Type: w.Type, Turn: w.Turn, Message: w.Message, ToolCallID: w.ToolCallID, ToolName: w.ToolName, Args: w.Args}
	switch w.Type {
	case runner.EventRunStart:
		ev.Start = &runner.RunStart{Model: w.Model}
	case runner.EventRunEnd:
		res := &runner.Result{Reason: w.Reason, Message: w.Text, Model: w.Model, SessionID: w.SessionID}
		if w.Error != "" && res.Message == "" {
			res.Message = w.Error
		}
		ev.End = res
	case agent.EventMessageUpdate:
		a.LLM = &llm.Event{Type: w.Event, Delta: w.Delta}
		ev.Agent = a
	case agent.EventToolExecutionUpdate:
		if w.Partial != nil {
			a.Partial = &tool.Partial{Content: w.Partial.Content}
		}
		ev.Agent = a
	case agent.EventToolExecutionEnd:
		res := tool.Result{IsError: w.IsError}
		if w.Result != nil {
			res.Content = w.Result.Content
		}
		a.Result = &res
		ev.Agent = a
	case agent.EventMessageStart, agent.EventMessageEnd, agent.EventToolExecutionStart:
		ev.Agent = a
	default:
		if w.Text != "" {
			ev.Notice = &runner.Notice{Message: w.Text, Reason: w.Reason}
		}
	}
	return ev
}

func (g *gatewayBackend) dispatch(ctx context.Context, data []byte) {
	var w wireEvent
	if err := json.Unmarshal(data, &w); err != nil {
		return // one odd line never ends the stream
	}
	switch w.Type {
	case "approval_requested":
		g.mu.Lock()
		if _, asked := g.pending[w.ApprovalID]; asked { // sent again to a new stream
			g.mu.Unlock()
			return
		}
		actx, cancel := context.WithCancel(ctx)
		if g.pending == nil {
			g.pending = make(map[string]context.CancelFunc)
		}
		g.pending[w.ApprovalID] = cancel
		g.mu.Unlock()
		g.approves.Add(1)
		go func() {
			defer g.approves.Done()
			g.askApproval(actx, w)
		}()
		return
	case "approval_resolved":
		// Answered here, or by the server (a timeout, an abort): the
		// question goes away.
		g.mu.Lock()
		if cancel := g.pending[w.ApprovalID]; cancel != nil {
			cancel()
			delete(g.pending, w.ApprovalID)
		}
		g.mu.Unlock()
		return
	case "run_queued", "session_status", "resync":
		return
	case runner.EventRunStart:
		g.mu.Lock()
		g.run = w.RunID
		if w.Model != "" {
			g.model = w.Model
		}
		g.mu.Unlock()
	case runner.EventRunEnd:
		g.mu.Lock()
		if g.run == w.RunID {
			g.run = ""
		}
		g.mu.Unlock()
	}
	g.sendMsg(tui.EventMsg{Event: w.event()})
}

// askApproval shows a pending approval of the gateway and sends the answer.
func (g *gatewayBackend) askApproval(ctx context.Context, w wireEvent) {
	ans, err := g.approver.Ask(ctx, tool.Call{ID: w.ToolCallID, Name: w.ToolName, Args: w.Args}, w.Text)
	in := map[string]string{"decision": "deny"}
	var denial tui.UserDenial
	switch {
	case errors.As(err, &denial):
		in["message"] = denial.Text
	case err != nil:
		return // the stream ended: the server cancels it with the run
	case ans == tool.AnswerYes:
		in["decision"] = "allow_once"
	case ans == tool.AnswerAlways:
		in["decision"] = "allow_session"
	}
	if _, err := g.call(ctx, "POST", "/v1/approvals/"+w.ApprovalID, in, nil); err != nil && ctx.Err() == nil {
		g.sendMsg(tui.RunErrorMsg{Err: fmt.Errorf("answer the approval: %w", err)})
	}
}

func newKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (g *gatewayBackend) Send(text string) error {
	g.mu.Lock()
	sid := g.session
	g.mu.Unlock()
	var out struct {
		RunID string `json:"runId"`
	}
	_, err := g.call(context.Background(), "POST", "/v1/sessions/"+sid+"/runs",
		map[string]string{"input": text, "idempotencyKey": newKey()}, &out)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.run = out.RunID
	g.mu.Unlock()
	return nil
}

func (g *gatewayBackend) activeRun() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.run
}

func (g *gatewayBackend) inject(path, text string) bool {
	id := g.activeRun()
	if id == "" {
		return false
	}
	_, err := g.call(context.Background(), "POST", "/v1/runs/"+id+"/"+path, map[string]string{"text": text}, nil)
	return err == nil
}

func (g *gatewayBackend) Steer(text string) bool    { return g.inject("steer", text) }
func (g *gatewayBackend) FollowUp(text string) bool { return g.inject("follow-up", text) }

func (g *gatewayBackend) Abort() {
	if id := g.activeRun(); id != "" {
		g.approves.Add(1)
		go func() {
			defer g.approves.Done()
			_, _ = g.call(context.Background(), "POST", "/v1/runs/"+id+"/abort", struct{}{}, nil)
		}()
	}
}

func (g *gatewayBackend) State() tui.State {
	g.mu.Lock()
	defer g.mu.Unlock()
	return tui.State{Model: g.model, Approve: g.approve, Session: g.session}
}

// Command runs the gateway's commands there; the rest that make sense
// over a connection here.
func (g *gatewayBackend) Command(ctx context.Context, name, args string) (string, error) {
	g.mu.Lock()
	sid := g.session
	g.mu.Unlock()
	switch name {
	case "model", "thinking", "compact":
		var out struct {
			Text string `json:"text"`
		}
		if _, err := g.call(ctx, "POST", "/v1/sessions/"+sid+"/command", map[string]string{"name": name, "args": args}, &out); err != nil {
			return "", err
		}
		if name == "model" && args != "" {
			g.mu.Lock()
			g.model = args
			g.mu.Unlock()
		}
		return out.Text, nil
	case "new":
		if err := g.open(ctx, "", "", ""); err != nil {
			return "", err
		}
		return "new session " + g.State().Session, nil
	case "resume":
		if args == "" {
			return "", errors.New("over --connect, give the session's id: /resume ID")
		}
		if err := g.open(ctx, args, "", ""); err != nil {
			return "", err
		}
		return "continuing session " + g.State().Session, nil
	case "fork":
		var s struct {
			ID string `json:"id"`
		}
		if _, err := g.call(ctx, "POST", "/v1/sessions/"+sid+"/fork", struct{}{}, &s); err != nil {
			return "", err
		}
		if err := g.open(ctx, s.ID, "", ""); err != nil {
			return "", err
		}
		return "continuing in the copy " + s.ID, nil
	case "session":
		return fmt.Sprintf("session %s on %s", sid, g.base), nil
	}
	return "", fmt.Errorf("/%s is not available over --connect (the gateway runs it)", name)
}

// close stops following the session, at the chat's end.
func (g *gatewayBackend) close() {
	g.mu.Lock()
	if g.stream != nil {
		g.stream()
	}
	g.mu.Unlock()
	g.streams.Wait()
	g.approves.Wait()
}

// runConnectedChat is agentloop chat --connect URL.
func runConnectedChat(ctx context.Context, env *cliEnv, f *runFlags, base string, fullscreen bool, prompt string) error {
	cwd, err := workspaceDir(f.cwd)
	if err != nil {
		return usageError{err}
	}
	g := &gatewayBackend{base: strings.TrimRight(base, "/"), token: env.getenv("AGENTLOOP_TOKEN"), client: &http.Client{}, approve: "(the gateway's)"}
	g.approver = &tui.Approver{}
	trace, closeTrace, err := chatTrace(env)
	if err != nil {
		return err
	}
	defer closeTrace()
	m := tui.New(tui.Options{Backend: g, Fullscreen: fullscreen, Cwd: cwd, Editor: chatEditor(env), Trace: trace})
	p := tea.NewProgram(m, chatProgramOptions(ctx, env, trace)...)
	g.sendMsg, g.approver.Send = p.Send, p.Send
	if err := g.open(ctx, f.session, cwd, f.model); err != nil {
		return exitError{code: exitFailed, msg: err.Error()}
	}
	if prompt != "" {
		go p.Send(tui.SendMsg{Text: prompt})
	}
	_, err = p.Run()
	g.Abort()
	g.close()
	if err != nil && !errors.Is(err, tea.ErrInterrupted) && !errors.Is(err, tea.ErrProgramKilled) {
		return err
	}
	if id := g.State().Session; id != "" {
		fmt.Fprintf(env.stderr, "agentloop: session %s on %s (agentloop chat --connect %s -r %s to continue it)\n", id, g.base, g.base, id)
	}
	return nil
}
