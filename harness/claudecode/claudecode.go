// Package claudecode is the harness that runs an attempt on Claude Code
// (npm @anthropic-ai/claude-code) in its print mode with stream-json on
// both sides: `claude -p --input-format stream-json --output-format
// stream-json --verbose --permission-prompt-tool stdio`. Claude Code owns
// its session (its session id, resumed with --resume, is the binding), its
// tools and its context; agentloop mirrors the turn into its transcript
// and answers every permission request (the stdio control protocol's
// can_use_tool) with the run's approval.
package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/internal/jsonl"
	"github.com/agentloop/agentloop/harness/internal/toolserver"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// ID is the harness id.
const ID = "claude-code"

// AbortWait is how long an aborted turn may take to stop after the
// interrupt before its process tree is killed.
const AbortWait = 10 * time.Second

// Config says how to start Claude Code.
type Config struct {
	// Command is the claude executable; "" means "claude" on PATH.
	Command string
	// Args are added after ours.
	Args []string
	// Env is the engine's environment; nil means this process's.
	Env []string
	// Trusted says whether the user trusts the workspace at cwd. Claude
	// Code in print mode asks nobody and would load the workspace's
	// .claude/settings.json and settings.local.json, whose apiKeyHelper,
	// env and statusLine run or steer it: outside a trusted workspace (nil
	// trusts none) it loads the user's settings only.
	Trusted func(cwd string) bool
}

// Harness runs attempts on Claude Code.
type Harness struct{ cfg Config }

// New returns the harness.
func New(cfg *Config) *Harness {
	h := &Harness{}
	if cfg != nil {
		h.cfg = *cfg
	}
	if h.cfg.Command == "" {
		h.cfg.Command = "claude"
	}
	return h
}

// ID returns "claude-code".
func (h *Harness) ID() string { return ID }

// Supports claims nothing by itself: Claude Code is chosen by name
// (--harness claude-code, or a model- or provider-scoped policy).
func (h *Harness) Supports(context.Context, harness.Route) harness.Support {
	return harness.Support{Reason: "chosen by name only"}
}

// changesNothing says a started call of Claude Code's tool name leaves
// nothing to undo, so the attempt may still be retried: the tools natives
// calls read-only, and the web ones (approval does not trust those, since
// a URL carries data out, but they change nothing here).
func changesNothing(name string) bool {
	n, ok := nativeNamed(name)
	return ok && n.readOnly || name == "WebFetch" || name == "WebSearch"
}

// wire shapes of stream-json.
type (
	line struct {
		Type      string          `json:"type"`
		Subtype   string          `json:"subtype"`
		SessionID string          `json:"session_id"`
		UUID      string          `json:"uuid"`
		Message   json.RawMessage `json:"message"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
		IsError   bool            `json:"is_error"`
		Result    string          `json:"result"`
		Errors    []string        `json:"errors"`
		Usage     *wireUsage      `json:"usage"`
		Version   string          `json:"claude_code_version"`
		Model     string          `json:"model"`
		CostUSD   float64         `json:"total_cost_usd"`
		Parent    *string         `json:"parent_tool_use_id"`
		// Replay marks a user message of ours echoed back
		// (--replay-user-messages) where Claude Code took it.
		Replay bool `json:"isReplay"`
	}
	wireUsage struct {
		Input      int `json:"input_tokens"`
		Output     int `json:"output_tokens"`
		CacheRead  int `json:"cache_read_input_tokens"`
		CacheWrite int `json:"cache_creation_input_tokens"`
	}
	wireMessage struct {
		ID      string      `json:"id"`
		Role    string      `json:"role"`
		Model   string      `json:"model"`
		Content []wireBlock `json:"content"`
		Usage   *wireUsage  `json:"usage"`
	}
	wireBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	permissionRequest struct {
		Subtype   string          `json:"subtype"`
		ToolName  string          `json:"tool_name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
	}
)

// RunAttempt runs one turn of Claude Code.
func (h *Harness) RunAttempt(ctx context.Context, a *harness.Attempt) (*harness.Result, error) {
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--replay-user-messages"}
	if a.Binding != nil {
		args = append(args, "--resume", a.Binding.NativeID)
	}
	if a.ModelID != "" {
		args = append(args, "--model", a.ModelID)
	}
	if a.System != "" {
		args = append(args, "--append-system-prompt", a.System)
	}
	args = append(args, toolsArgs(a)...)
	if h.cfg.Trusted == nil || !h.cfg.Trusted(a.Cwd) {
		args = append(args, "--setting-sources", "user")
	}
	if _, err := exec.LookPath(h.cfg.Command); err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: err}
	}
	// The run's tools reach Claude Code as an MCP server of ours.
	ts, err := toolserver.Serve(a.Tools, nil)
	if err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: fmt.Errorf("serve the run's tools: %w", err)}
	}
	defer ts.Close()
	tmp, err := os.MkdirTemp("", "agentloop-claude-")
	if err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: err}
	}
	defer os.RemoveAll(tmp)
	mcp, err := mcpArgs(ts, tmp)
	if err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: err}
	}
	args = append(args, mcp...)
	args = append(args, settingsArgs()...)
	args = append(args, h.cfg.Args...)
	dir := a.Cwd
	if dir != "" {
		if _, err := os.Stat(dir); err != nil {
			dir = ""
		}
	}
	conn, err := jsonl.Start(h.cfg.Command, args, dir, h.cfg.Env)
	if err != nil {
		return nil, &harness.PreflightError{Harness: ID, Err: err}
	}
	t := &turn{h: h, a: a, conn: conn, m: harness.NewMirror(a), names: map[string]string{}, refused: map[string]bool{}, approved: map[string]bool{},
		tracker: &harness.Tracker{}, res: &harness.Result{}}
	if a.Binding != nil {
		t.native, t.version = a.Binding.NativeID, a.Binding.Version
	}
	err = t.run(ctx)
	exit := conn.Close(2 * time.Second)
	res := t.res
	res.Items = t.m.Items()
	res.PromptPersisted = t.m.PromptPersisted
	if t.native != "" {
		res.Binding = &harness.Binding{Harness: ID, NativeID: t.native, Version: t.version, Cwd: a.Cwd}
	}
	if err != nil {
		var lost *harness.BindingLostError
		if errors.As(err, &lost) {
			return nil, err
		}
		res.Err = err
	}
	if res.Err == nil && !t.gotResult {
		res.Err = &harness.Error{Harness: ID, Reason: "exited", Err: fmt.Errorf("claude ended before its result (%v): %s", exit, strings.TrimSpace(conn.Stderr()))}
		res.SideEffects = true // what it did before it died is unknown
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

// turn is one attempt's state.
type turn struct {
	h         *Harness
	a         *harness.Attempt
	conn      *jsonl.Conn
	m         *harness.Mirror
	tracker   *harness.Tracker
	res       *harness.Result
	native    string
	version   string
	names     map[string]string // tool call id → tool name
	args      map[string]json.RawMessage
	refused   map[string]bool
	approved  map[string]bool // our approval let these through: their ends go to AfterTool
	n         int
	gotResult bool
	// metered are the model messages whose usage was reported: Claude Code
	// repeats a message, usage included, once per content block.
	metered map[string]bool
	inited  bool

	// steerMu guards what a steer from another goroutine touches.
	steerMu sync.Mutex
	// steers are the texts of steered messages not yet echoed back: the
	// turn does not end at a result while one is pending, since Claude
	// Code answers it in a turn of its own.
	steers []string
	// closed: the final result came; a steer now would start a turn
	// nobody reads.
	closed bool
}

func (t *turn) emit(ev agent.Event) {
	if t.a.Emit != nil {
		t.a.Emit(ev)
	}
}

func (t *turn) observe(r harness.ToolTerminal) harness.ToolResolution {
	if t.a.ObserveToolTerminal != nil {
		return t.a.ObserveToolTerminal(r)
	}
	return t.tracker.Observe(r)
}

func (t *turn) run(ctx context.Context) error {
	prompt := t.a.Prompt.Text()
	if c := t.a.Continuation; c != nil {
		// Claude Code keeps its own record of the failed turn: ask it to
		// carry on rather than to start over.
		prompt = "Continue the previous request where it stopped; do not run again the tools that already finished.\n\n" + prompt
	}
	if err := t.conn.Send(userLine(prompt)); err != nil {
		return &harness.PreflightError{Harness: ID, Err: fmt.Errorf("write the prompt: %w", err)}
	}
	if set := t.a.SetSteer; set != nil {
		// A user line written while the turn runs: Claude Code hands it
		// to the model with the next tool result, or, when no tool call is
		// left, answers it in a turn of its own after this one's result.
		// Either way it is echoed back where it was taken.
		set(t.steer)
		defer set(nil)
	}
	t.args = map[string]json.RawMessage{}
	var abort <-chan time.Time
	done := ctx.Done()
	for {
		select {
		case <-done:
			// Interrupt, then wait for the turn to end; kill at AbortWait.
			done = nil
			_ = t.conn.Send(map[string]any{"type": "control_request", "request_id": "agentloop-interrupt",
				"request": map[string]any{"subtype": "interrupt"}})
			abort = time.After(AbortWait)
		case <-abort:
			t.conn.Kill()
			abort = nil
		case b, ok := <-t.conn.Lines:
			if !ok {
				return nil
			}
			var l line
			if json.Unmarshal(b, &l) != nil {
				continue // one odd line never ends a stream
			}
			if end, err := t.handle(ctx, &l); end || err != nil {
				return err
			}
		}
	}
}

func (t *turn) handle(ctx context.Context, l *line) (end bool, err error) {
	if l.SessionID != "" && t.native == "" {
		t.native = l.SessionID
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			if l.SessionID != "" {
				t.native = l.SessionID // a changed id is a transfer
			}
			if l.Version != "" {
				t.version = l.Version
			}
			if t.a.Continuation == nil && !t.inited {
				id := harness.MirrorID(ID, t.native, t.a.RunID, "user")
				if err := t.m.Add(ctx, harness.Item{MirrorID: id, Message: t.a.Prompt}, true); err != nil {
					return true, err
				}
			}
			t.inited = true // a steer answered after the result starts another
		}
	case "assistant":
		if l.Parent != nil && *l.Parent != "" {
			return false, nil // a subagent's inner turn: not ours to mirror
		}
		var wm wireMessage
		if json.Unmarshal(l.Message, &wm) != nil {
			return false, nil
		}
		msg := llm.Message{Role: llm.RoleAssistant, Provider: "claude-code", Model: wm.Model, StopReason: llm.StopReasonStop, Timestamp: llm.NowMillis()}
		for _, b := range wm.Content {
			switch b.Type {
			case "text":
				msg.Content = append(msg.Content, llm.Text(b.Text))
			case "thinking":
				msg.Content = append(msg.Content, llm.Thinking(b.Thinking, ""))
			case "tool_use":
				args := b.Input
				if len(args) == 0 {
					args = json.RawMessage(`{}`)
				}
				msg.Content = append(msg.Content, llm.ToolCall(b.ID, b.Name, args))
				msg.StopReason = llm.StopReasonToolUse
				t.names[b.ID], t.args[b.ID] = b.Name, args
			}
		}
		if len(msg.Content) == 0 {
			return false, nil
		}
		if u := wm.Usage; u != nil && (wm.ID == "" || !t.metered[wm.ID]) {
			// The usage of this model call so far, reported as it comes so
			// the run's budget binds mid-turn; the result's totals add
			// what came after (its output tokens), and Result.Usage is them.
			if t.metered == nil {
				t.metered = map[string]bool{}
			}
			t.metered[wm.ID] = true
			msg.Usage = &llm.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
				Total: u.Input + u.Output + u.CacheRead + u.CacheWrite}
		}
		if err := t.add(ctx, l.UUID, msg); err != nil {
			return true, err
		}
		for _, c := range msg.ToolCalls() {
			t.emit(agent.Event{Type: agent.EventToolExecutionStart, ToolCallID: c.ID, ToolName: c.Name, Args: c.Arguments})
		}
	case "user":
		if l.Parent != nil && *l.Parent != "" {
			return false, nil
		}
		if l.Replay {
			return false, t.echoed(ctx, l)
		}
		var wm wireMessage
		if json.Unmarshal(l.Message, &wm) != nil {
			return false, nil
		}
		for i, b := range wm.Content {
			if b.Type != "tool_result" {
				continue
			}
			name := t.names[b.ToolUseID]
			text := blockText(b.Content)
			rm := llm.Message{Role: llm.RoleToolResult, ToolCallID: b.ToolUseID, ToolName: name, IsError: b.IsError,
				Content: []llm.Content{llm.Text(text)}, Timestamp: llm.NowMillis()}
			if err := t.add(ctx, fmt.Sprintf("%s/%d", l.UUID, i), rm); err != nil {
				return true, err
			}
			started := !t.refused[b.ToolUseID]
			mutating := !changesNothing(name)
			if own, ok := ownTool(name); ok {
				mutating = t.a.Tools == nil || !t.a.Tools.ReadOnly(tool.Call{ID: b.ToolUseID, Name: own, Args: t.args[b.ToolUseID]})
			}
			if started && mutating {
				t.res.SideEffects = true
			}
			r := harness.ToolTerminal{CallID: b.ToolUseID, Name: name, Args: t.args[b.ToolUseID], ExecutionStarted: started,
				Outcome: harness.OutcomeSuccess, Mutating: mutating}
			if b.IsError {
				r.Outcome, r.Error = harness.OutcomeFailure, text
			}
			t.res.LastToolError = t.observe(r).LastToolError
			res := tool.Result{Content: rm.Content, IsError: b.IsError}
			if t.approved[b.ToolUseID] {
				own, _ := ownTool(name)
				t.a.ToolDone(ctx, tool.Call{ID: b.ToolUseID, Name: orStr(own, name), Args: t.args[b.ToolUseID]}, res, started)
			}
			t.emit(agent.Event{Type: agent.EventToolExecutionEnd, ToolCallID: b.ToolUseID, ToolName: name, Args: t.args[b.ToolUseID], Result: &res})
		}
	case "control_request":
		return false, t.permission(ctx, l)
	case "result":
		t.gotResult = true
		last := t.settle(ctx, l.IsError)
		if u := l.Usage; u != nil {
			t.res.Usage.Add(llm.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
				Total: u.Input + u.Output + u.CacheRead + u.CacheWrite, Cost: llm.Cost{Total: l.CostUSD}})
		}
		if l.IsError {
			msg := strings.Join(l.Errors, "; ")
			if msg == "" {
				msg = orStr(l.Result, l.Subtype)
			}
			if t.a.Binding != nil && strings.Contains(msg, "No conversation found") {
				return true, &harness.BindingLostError{Harness: ID, NativeID: t.a.Binding.NativeID, SessionID: t.a.SessionID, Err: errors.New(msg)}
			}
			if ctx.Err() == nil {
				t.res.StopReason = llm.StopReasonError
				return true, &harness.Error{Harness: ID, Reason: "turn_failed", Err: errors.New(msg)}
			}
		}
		t.res.StopReason = llm.StopReasonStop
		return last, nil
	}
	return false, nil
}

func userLine(text string) map[string]any {
	return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}}
}

// steer writes a steered message to the running turn; false once the turn
// has ended (or stdin is gone), so the caller knows it was not taken.
func (t *turn) steer(m llm.Message) bool {
	text := m.Text()
	t.steerMu.Lock()
	defer t.steerMu.Unlock()
	if t.closed || text == "" || t.conn.Send(userLine(text)) != nil {
		return false
	}
	t.steers = append(t.steers, text)
	return true
}

// settle says whether a result ends the attempt: it does unless a steer is
// still to be answered (and the turn was neither aborted nor failed). From
// then on no steer is taken.
func (t *turn) settle(ctx context.Context, failed bool) bool {
	t.steerMu.Lock()
	defer t.steerMu.Unlock()
	if len(t.steers) > 0 && !failed && ctx.Err() == nil {
		return false
	}
	t.closed = true
	return true
}

// echoed handles a user message of ours coming back: the prompt (mirrored
// at init already) or a steer, mirrored once where Claude Code took it.
func (t *turn) echoed(ctx context.Context, l *line) error {
	text := replayText(l.Message)
	t.steerMu.Lock()
	i := slices.Index(t.steers, text)
	if i >= 0 {
		t.steers = slices.Delete(t.steers, i, i+1)
	}
	t.steerMu.Unlock()
	if i < 0 {
		return nil // the prompt, or history a resume replays
	}
	msg := llm.UserText(text)
	msg.Timestamp = llm.NowMillis()
	return t.add(ctx, "steer-"+orStr(l.UUID, strconv.Itoa(t.n)), msg)
}

// replayText is the text of an echoed user message: a string or text
// blocks.
func replayText(raw json.RawMessage) string {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	return blockText(m.Content)
}

// add mirrors one native item under its stable id.
func (t *turn) add(ctx context.Context, item string, msg llm.Message) error {
	if item == "" {
		item = fmt.Sprintf("n%d", t.n)
	}
	t.n++
	if err := t.m.Add(ctx, harness.Item{MirrorID: harness.MirrorID(ID, t.native, t.a.RunID, item), Message: msg}, false); err != nil {
		return err
	}
	harness.EmitMessage(t.a.Emit, msg)
	return nil
}

// permission answers can_use_tool with the run's approval.
func (t *turn) permission(ctx context.Context, l *line) error {
	var r permissionRequest
	if json.Unmarshal(l.Request, &r) != nil || r.Subtype != "can_use_tool" {
		// Not a question we can answer: say so, never leave it pending.
		return t.conn.Send(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": l.RequestID, "error": "agentloop does not handle this request"}})
	}
	input := r.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	name := r.ToolName
	if own, ok := ownTool(name); ok {
		name = own // one of the run's tools: the approval knows it by its own name
	}
	c, allow, reason := tool.Call{ID: r.ToolUseID, Name: name, Args: input}, false, refuseNative(t.a, r.ToolName)
	if reason == "" { // the run's tool policy lets it go on to the hooks and the approval
		c, allow, reason = t.a.Approve(tool.WithEquivalent(ctx, equivalent), c)
	}
	answer := map[string]any{"behavior": "allow", "updatedInput": c.Args} // a hook's rewrite included
	if allow {
		t.approved[r.ToolUseID] = true
	} else {
		t.refused[r.ToolUseID] = true
		answer = map[string]any{"behavior": "deny", "message": orStr(reason, "denied by agentloop's approval policy")}
	}
	return t.conn.Send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": l.RequestID, "response": answer}})
}

// blockText reads a tool_result's content: a string or text blocks.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []wireBlock
	if json.Unmarshal(raw, &blocks) == nil {
		var b strings.Builder
		for _, bl := range blocks {
			if bl.Type == "text" {
				b.WriteString(bl.Text)
			}
		}
		return b.String()
	}
	return string(raw)
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
