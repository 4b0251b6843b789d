// Package pi is the harness that runs an attempt on pi (npm
// @mariozechner/pi-coding-agent) in its rpc mode, `pi --mode rpc`. pi owns
// its session file (its path is the binding, resumed with --session), its
// tools and its context; agentloop mirrors the turn into its transcript.
// pi has no permission prompts of its own: the harness loads a small pi
// extension (approve.js) that puts every tool call to agentloop through
// pi's extension UI protocol, answered with the run's approval.
package pi

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/internal/jsonl"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// ID is the harness id.
const ID = "pi"

// AbortWait is how long an aborted turn may take to end after pi's abort
// command before its process tree is killed.
const AbortWait = 10 * time.Second

//go:embed approve.js
var approveJS []byte

// approveTitle marks the extension's approval questions.
const approveTitle = "agentloop:approve"

//go:embed tools.js
var toolsJS []byte

// toolTitle marks the tools extension's calls of the run's tools.
const toolTitle = "agentloop:tool"

// builtinTools are pi's own tools: the run's tools of those names are
// pi's (the same tools), not offered again.
var builtinTools = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range harness.PiTools {
		m[n] = true
	}
	return m
}()

// toolsExtension is the extension that offers the run's other tools to
// pi, or nil when there is none.
func toolsExtension(reg *tool.Registry) []byte {
	if reg == nil {
		return nil
	}
	type spec struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var specs []spec
	for _, s := range reg.Specs() {
		if builtinTools[s.Name] {
			continue
		}
		p := s.Parameters
		if len(p) == 0 {
			p = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		specs = append(specs, spec{s.Name, s.Description, p})
	}
	if len(specs) == 0 {
		return nil
	}
	list, _ := json.Marshal(specs)
	return append([]byte("const TOOLS = "+string(list)+";\n"), toolsJS...)
}

// Config says how to start pi.
type Config struct {
	// Command is the pi executable; "" means "pi" on PATH.
	Command string
	// Model is pi's model ("provider/id" as pi's models.json names it);
	// "" means the attempt's model id.
	Model string
	// Args are added after ours; Env is pi's environment (nil: ours).
	Args []string
	Env  []string
	// Trusted says whether the user trusts the workspace at cwd. pi
	// discovers extensions in it (.pi/extensions), JavaScript it runs at
	// start: outside a trusted workspace (nil trusts none) pi is started
	// with --no-extensions, which leaves out those of ~/.pi/agent too.
	Trusted func(cwd string) bool
}

// Harness runs attempts on pi.
type Harness struct{ cfg Config }

// New returns the harness.
func New(cfg *Config) *Harness {
	h := &Harness{}
	if cfg != nil {
		h.cfg = *cfg
	}
	if h.cfg.Command == "" {
		h.cfg.Command = "pi"
	}
	return h
}

// ID returns "pi".
func (h *Harness) ID() string { return ID }

// Supports claims nothing by itself: pi is chosen by name.
func (h *Harness) Supports(context.Context, harness.Route) harness.Support {
	return harness.Support{Reason: "chosen by name only"}
}

// readOnlyTools are pi's tools that change nothing.
var readOnlyTools = map[string]bool{"read": true, "grep": true, "find": true, "ls": true}

type event struct {
	Type       string           `json:"type"`
	ID         string           `json:"id"`
	Command    string           `json:"command"`
	Success    bool             `json:"success"`
	Error      string           `json:"error"`
	Data       json.RawMessage  `json:"data"`
	Message    *llm.Message     `json:"message"`
	Messages   []llm.Message    `json:"messages"`
	Method     string           `json:"method"`
	Title      string           `json:"title"`
	Payload    string           `json:"placeholder"`
	ToolCallID string           `json:"toolCallId"`
	ToolName   string           `json:"toolName"`
	Args       json.RawMessage  `json:"args"`
	Result     *json.RawMessage `json:"result"`
	IsError    bool             `json:"isError"`
}

type state struct {
	SessionFile string `json:"sessionFile"`
	SessionID   string `json:"sessionId"`
}

// RunAttempt runs one turn of pi.
func (h *Harness) RunAttempt(ctx context.Context, a *harness.Attempt) (*harness.Result, error) {
	if _, err := exec.LookPath(h.cfg.Command); err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: err}
	}
	if b := a.Binding; b != nil && strings.ContainsRune(b.NativeID, os.PathSeparator) {
		if _, err := os.Stat(b.NativeID); err != nil {
			return nil, &harness.BindingLostError{Harness: ID, NativeID: b.NativeID, SessionID: a.SessionID, Err: err}
		}
	}
	dir, err := os.MkdirTemp("", "agentloop-pi-")
	if err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: err}
	}
	defer os.RemoveAll(dir)
	ext := filepath.Join(dir, "agentloop-approve.js")
	if err := os.WriteFile(ext, approveJS, 0o600); err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: err}
	}
	args := []string{"--mode", "rpc", "-e", ext}
	if js := toolsExtension(a.Tools); js != nil {
		tools := filepath.Join(dir, "agentloop-tools.js")
		if err := os.WriteFile(tools, js, 0o600); err != nil {
			return nil, &harness.PreflightError{Harness: ID, Err: err}
		}
		args = append(args, "-e", tools)
	}
	args = append(args, toolsArgs(a)...)
	if h.cfg.Trusted == nil || !h.cfg.Trusted(a.Cwd) {
		// The workspace's .pi/extensions are code pi would run at start;
		// ours above are named with -e and load all the same.
		args = append(args, "--no-extensions")
	}
	if m := orStr(h.cfg.Model, a.ModelID); m != "" {
		args = append(args, "--model", m)
	}
	if a.Binding != nil {
		args = append(args, "--session", a.Binding.NativeID)
	}
	if a.System != "" {
		args = append(args, "--append-system-prompt", a.System)
	}
	args = append(args, h.cfg.Args...)
	wd := a.Cwd
	if wd != "" {
		if _, err := os.Stat(wd); err != nil {
			wd = ""
		}
	}
	conn, err := jsonl.Start(h.cfg.Command, args, wd, h.cfg.Env)
	if err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: err}
	}
	t := &turn{a: a, conn: conn, m: harness.NewMirror(a), tracker: &harness.Tracker{}, res: &harness.Result{},
		refused: map[string]bool{}, allowed: map[string]bool{}, args: map[string]json.RawMessage{}}
	if a.Binding != nil {
		t.native = a.Binding.NativeID
	}
	err = t.run(ctx)
	if lost := t.undelivered(); len(lost) > 0 && a.Warn != nil && ctx.Err() == nil {
		a.Warn(fmt.Sprintf("pi ended its turn before it read %d steered message(s) (%q); they were not delivered: send them again",
			len(lost), strings.Join(lost, " / ")))
	}
	exit := conn.Close(2 * time.Second)
	res := t.res
	res.Items = t.m.Items()
	res.PromptPersisted = t.m.PromptPersisted
	if t.native != "" {
		res.Binding = &harness.Binding{Harness: ID, NativeID: t.native, Cwd: a.Cwd}
	}
	if err != nil {
		res.Err = err
	}
	if res.Err == nil && !t.ended {
		res.Err = &harness.Error{Harness: ID, Reason: "exited", Err: fmt.Errorf("pi ended before its turn did (%v): %s", exit, strings.TrimSpace(conn.Stderr()))}
		res.SideEffects = true
	}
	if res.Err != nil && res.StopReason == "" {
		res.StopReason = llm.StopReasonError
	}
	if ctx.Err() != nil {
		res.StopReason, res.Err = llm.StopReasonAborted, ctx.Err()
	}
	var own []llm.Message
	for _, it := range res.Items {
		own = append(own, it.Message)
	}
	res.Settled = res.Err == nil && harness.Settled(own)
	return res, nil
}

type turn struct {
	a       *harness.Attempt
	conn    *jsonl.Conn
	m       *harness.Mirror
	tracker *harness.Tracker
	res     *harness.Result
	native  string
	refused map[string]bool
	// prompted: the turn's prompt came back; later user messages are steers.
	prompted bool
	// allowed are the calls the approval gate let through: the only ones
	// runTool carries out.
	allowed map[string]bool
	args    map[string]json.RawMessage
	ended   bool
	last    *llm.Message

	// steerMu guards what a steer from another goroutine touches: the
	// steers sent and not yet back as user messages, and whether pi's run
	// is over (agent_end: a steer now would wait in pi's queue for a
	// prompt that never comes).
	steerMu     sync.Mutex
	steers      []string
	steerClosed bool
}

func (t *turn) emit(ev agent.Event) {
	if t.a.Emit != nil {
		t.a.Emit(ev)
	}
}

func (t *turn) run(ctx context.Context) error {
	prompt := t.a.Prompt.Text()
	if t.a.Continuation != nil {
		prompt = "Continue the previous request where it stopped; do not run again the tools that already finished.\n\n" + prompt
	}
	// The session file first: it names the mirrored items' thread.
	if err := t.conn.Send(map[string]any{"id": "start", "type": "get_state"}); err != nil {
		return &harness.Error{Harness: ID, Reason: "disconnected", Err: err}
	}
	if err := t.conn.Send(map[string]any{"id": "prompt", "type": "prompt", "message": prompt}); err != nil {
		return &harness.Error{Harness: ID, Reason: "disconnected", Err: err}
	}
	if set := t.a.SetSteer; set != nil {
		// pi's rpc steer: delivered after the current tool batch, before
		// its next model call; it comes back as a user message.
		set(func(m llm.Message) bool {
			t.steerMu.Lock()
			defer t.steerMu.Unlock()
			if t.steerClosed || t.conn.Send(map[string]any{"type": "steer", "message": m.Text()}) != nil {
				return false
			}
			t.steers = append(t.steers, m.Text())
			return true
		})
		defer set(nil)
	}
	var abort <-chan time.Time
	done := ctx.Done()
	for {
		select {
		case <-done:
			done = nil
			_ = t.conn.Send(map[string]any{"type": "abort"})
			abort = time.After(AbortWait)
		case <-abort:
			t.conn.Kill()
			abort = nil
		case b, ok := <-t.conn.Lines:
			if !ok {
				return nil
			}
			var ev event
			if json.Unmarshal(b, &ev) != nil {
				continue
			}
			if end, err := t.handle(ctx, &ev); end || err != nil {
				return err
			}
		}
	}
}

func (t *turn) handle(ctx context.Context, ev *event) (bool, error) {
	switch ev.Type {
	case "response":
		switch {
		case ev.Command == "prompt" && !ev.Success:
			return true, &harness.Error{Harness: ID, Reason: "prompt_refused", Err: errors.New(ev.Error)}
		case ev.Command == "get_state":
			var st state
			if json.Unmarshal(ev.Data, &st) == nil && st.SessionFile != "" {
				t.native = st.SessionFile // a changed file is a transfer
			}
			if ev.ID == "start" {
				return false, nil
			}
			t.ended = true
			return true, t.outcome()
		}
	case "message_end":
		if ev.Message == nil {
			return false, nil
		}
		msg := *ev.Message
		item := string(msg.Role) + "-" + strconv.FormatInt(msg.Timestamp, 10)
		user := msg.Role == llm.RoleUser
		switch {
		case user && t.prompted:
			user = false // a steer: mirrored, not the turn's prompt
			item = "steer-" + strconv.FormatInt(msg.Timestamp, 10)
			t.steerDelivered(msg.Text())
		case user && t.a.Continuation != nil:
			t.prompted = true
			return false, nil // the continuation's nudge is not the user's turn
		case user:
			t.prompted = true
			item = "user"
		case msg.Role == llm.RoleToolResult:
			item = "result-" + msg.ToolCallID
			t.terminal(&msg)
		case msg.Role == llm.RoleAssistant:
			m := msg
			t.last = &m
			if u := msg.Usage; u != nil {
				t.res.Usage.Add(*u)
			}
		}
		thread := orStr(t.native, "new")
		if err := t.m.Add(ctx, harness.Item{MirrorID: harness.MirrorID(ID, thread, t.a.RunID, item), Message: msg}, user); err != nil {
			return true, err
		}
		if !user {
			harness.EmitMessage(t.a.Emit, msg)
		}
	case "tool_execution_start":
		t.args[ev.ToolCallID] = ev.Args
		t.emit(agent.Event{Type: agent.EventToolExecutionStart, ToolCallID: ev.ToolCallID, ToolName: ev.ToolName, Args: ev.Args})
	case "extension_ui_request":
		return false, t.answer(ctx, ev)
	case "agent_end":
		t.steerMu.Lock()
		t.steerClosed = true
		t.steerMu.Unlock()
		// Ask where pi keeps the session: that file is the binding.
		if err := t.conn.Send(map[string]any{"id": "state", "type": "get_state"}); err != nil {
			t.ended = true
			return true, t.outcome()
		}
	}
	return false, nil
}

// steerDelivered marks the steer of that text as back from pi.
func (t *turn) steerDelivered(text string) {
	t.steerMu.Lock()
	defer t.steerMu.Unlock()
	for i, s := range t.steers {
		if s == text {
			t.steers = slices.Delete(t.steers, i, i+1)
			return
		}
	}
}

// undelivered are the steers pi took but never delivered: it ended its
// run before its next model call.
func (t *turn) undelivered() []string {
	t.steerMu.Lock()
	defer t.steerMu.Unlock()
	return slices.Clone(t.steers)
}

// outcome reads the end of the turn from its last assistant message.
func (t *turn) outcome() error {
	if t.last == nil {
		return nil
	}
	t.res.StopReason = t.last.StopReason
	if t.last.StopReason == llm.StopReasonError {
		return &harness.Error{Harness: ID, Reason: "turn_failed", Err: errors.New(orStr(t.last.ErrorMessage, "pi's model call failed"))}
	}
	return nil
}

// terminal reports a tool result's end.
func (t *turn) terminal(msg *llm.Message) {
	name := msg.ToolName
	started := !t.refused[msg.ToolCallID]
	mutating := !readOnlyTools[name]
	if started && mutating {
		t.res.SideEffects = true
	}
	r := harness.ToolTerminal{CallID: msg.ToolCallID, Name: name, Args: t.args[msg.ToolCallID], ExecutionStarted: started,
		Outcome: harness.OutcomeSuccess, Mutating: mutating}
	if msg.IsError {
		r.Outcome, r.Error = harness.OutcomeFailure, msg.Text()
	}
	observe := t.a.ObserveToolTerminal
	if observe == nil {
		observe = t.tracker.Observe
	}
	t.res.LastToolError = observe(r).LastToolError
	res := tool.Result{Content: msg.Content, IsError: msg.IsError}
	if t.allowed[msg.ToolCallID] {
		t.a.ToolDone(context.Background(), tool.Call{ID: msg.ToolCallID, Name: name, Args: t.args[msg.ToolCallID]}, res, started)
	}
	t.emit(agent.Event{Type: agent.EventToolExecutionEnd, ToolCallID: msg.ToolCallID, ToolName: name, Args: t.args[msg.ToolCallID], Result: &res})
}

// answer replies to an extension UI dialog: the approval gate's questions
// with the run's approval, any other dialog cancelled (nobody is there).
func (t *turn) answer(ctx context.Context, ev *event) error {
	switch ev.Method {
	case "select", "confirm", "input", "editor":
	default:
		return nil // fire-and-forget
	}
	if ev.Method == "input" && ev.Title == toolTitle {
		return t.runTool(ctx, ev)
	}
	if ev.Method != "input" || ev.Title != approveTitle {
		return t.conn.Send(map[string]any{"type": "extension_ui_response", "id": ev.ID, "cancelled": true})
	}
	var q struct {
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		Input      json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal([]byte(ev.Payload), &q)
	// A tool the run's tool policy leaves out is refused before the hooks
	// and the approval (--tools keeps pi from offering it at all).
	allow, reason := t.a.ToolAllowed(harness.PiTool(q.ToolName, t.a.Tools))
	if allow {
		allow, reason = t.a.ApproveAsAsked(ctx, tool.Call{ID: q.ToolCallID, Name: q.ToolName, Args: q.Input})
	}
	value := "allow"
	if allow {
		t.allowed[q.ToolCallID] = true
	} else {
		t.refused[q.ToolCallID] = true
		value = orStr(reason, "Denied by agentloop's approval policy.")
	}
	return t.conn.Send(map[string]any{"type": "extension_ui_response", "id": ev.ID, "value": value})
}

// runTool carries out a call of one of the run's tools the tools extension
// hands over (approved already by the gate's tool_call question) and
// answers with its result.
func (t *turn) runTool(ctx context.Context, ev *event) error {
	var q struct {
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		Input      json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal([]byte(ev.Payload), &q)
	out := struct {
		Text    string `json:"text"`
		IsError bool   `json:"isError"`
	}{"the tool is not among the run's tools", true}
	if !t.allowed[q.ToolCallID] {
		out.Text = "agentloop's approval gate did not let this call through"
	} else if reg := t.a.Tools; reg != nil && !builtinTools[q.ToolName] {
		if len(q.Input) == 0 {
			q.Input = json.RawMessage(`{}`)
		}
		res := reg.Execute(ctx, llm.ToolCall(q.ToolCallID, q.ToolName, q.Input), nil)
		out.Text, out.IsError = res.Text(), res.IsError
	}
	value, _ := json.Marshal(out)
	return t.conn.Send(map[string]any{"type": "extension_ui_response", "id": ev.ID, "value": string(value)})
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
