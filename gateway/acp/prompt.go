package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	loop "github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/command"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/tool"
)

// Prompt runs one prompt and answers once the run has ended and every
// update of it was sent.
func (a *agent) Prompt(ctx context.Context, req sdk.PromptRequest) (sdk.PromptResponse, error) {
	// The session is looked up and claimed in one step, so a load of it
	// (open) never replaces and closes it under this prompt.
	a.mu.Lock()
	s := a.sessions[string(req.SessionId)]
	if s == nil {
		a.mu.Unlock()
		return sdk.PromptResponse{}, unknownSession(req.SessionId)
	}
	if a.closed {
		a.mu.Unlock()
		return sdk.PromptResponse{}, errors.New("the connection is closing")
	}
	a.prompts.Add(1)
	s.claims++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		s.claims--
		a.mu.Unlock()
		a.prompts.Done()
	}()
	s.prompts.Add(1)
	defer s.prompts.Done()

	text, images := promptContent(req.Prompt)
	if err := checkPrompt(req.Prompt, text, images); err != nil {
		return sdk.PromptResponse{}, err
	}
	send := s.sender(context.WithoutCancel(ctx))
	s.sendCommands(send)
	if name, args, ok, err := command.Parse(text); ok && len(images) == 0 {
		return s.command(ctx, send, name, args, err)
	}
	return s.prompt(ctx, send, text, images)
}

// checkPrompt refuses a prompt no provider would take: nothing to say (a
// request with an empty user turn is refused by some providers, after the
// session recorded it), or an image that is not base64 image data.
func checkPrompt(blocks []sdk.ContentBlock, text string, images []llm.Content) error {
	for _, b := range blocks {
		if im := b.Image; im != nil {
			if !strings.HasPrefix(im.MimeType, "image/") {
				return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("an image of type %q: give an image/* type", im.MimeType)})
			}
			if _, err := base64.StdEncoding.DecodeString(im.Data); err != nil || im.Data == "" {
				return sdk.NewInvalidParams(map[string]any{"error": "an image whose data is not base64"})
			}
		}
	}
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		return sdk.NewInvalidParams(map[string]any{"error": "the prompt is empty"})
	}
	return nil
}

// promptContent is the prompt's text and images. Embedded resources (the
// files an editor attaches) are appended to the text, each fenced under
// its URI; links are named, for the model to read.
func promptContent(blocks []sdk.ContentBlock) (string, []llm.Content) {
	var text strings.Builder
	var images []llm.Content
	para := func() {
		if text.Len() > 0 {
			text.WriteString("\n\n")
		}
	}
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			if text.Len() > 0 && !strings.HasSuffix(text.String(), "\n") {
				text.WriteString("\n")
			}
			text.WriteString(b.Text.Text)
		case b.Image != nil:
			images = append(images, llm.Image(b.Image.Data, b.Image.MimeType))
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			para()
			fmt.Fprintf(&text, "Contents of %s:\n```\n%s\n```", r.Uri, strings.TrimSuffix(r.Text, "\n"))
		case b.Resource != nil && b.Resource.Resource.BlobResourceContents != nil:
			para()
			fmt.Fprintf(&text, "(attached: %s, binary, not included)", b.Resource.Resource.BlobResourceContents.Uri)
		case b.ResourceLink != nil:
			para()
			fmt.Fprintf(&text, "(see %s)", b.ResourceLink.Uri)
		}
	}
	return text.String(), images
}

// prompt is one run of the session, its events sent as updates.
func (s *sess) prompt(ctx context.Context, send func(sdk.SessionUpdate), text string, images []llm.Content) (sdk.PromptResponse, error) {
	set := s.settings()
	built, err := s.a.cfg.Request(ctx, s.info, set)
	if err != nil {
		return sdk.PromptResponse{}, runError(err)
	}
	if built.Done != nil {
		defer built.Done()
	}
	q := built.Request
	// The run is aborted, never merely cancelled, so it ends "aborted"
	// whatever stopped it: session/cancel, $/cancel_request on this
	// prompt, a newer prompt, the editor going away.
	runCtx, abort := context.WithCancelCause(context.WithoutCancel(ctx))
	defer abort(nil)
	p := newPromptRun(s, send, runCtx, abort, q.Info.ContextWindow)
	stop := context.AfterFunc(ctx, func() { abort(runner.ErrAborted) })
	defer stop()
	s.mu.Lock()
	s.active[p] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.active, p)
		s.mu.Unlock()
	}()

	q.Prompt, q.Images = text, images
	spec := s.spec(ctx)
	spec.Lock, spec.Opened = q.Session.Lock, q.Session.Opened // the caller's, if any
	q.Session = spec
	q.OnEvent = p.onEvent
	var base tool.Approval
	if q.Approval != nil {
		base.Policy, base.ReadOnly = q.Approval.Policy, q.Approval.ReadOnly
	}
	q.Approval = &tool.Approval{Policy: p.policy(base.Policy), Ask: p.ask, ReadOnly: base.ReadOnly}

	var res runner.Result
	var runErr error
	go func() {
		res, runErr = s.runner.Run(runCtx, q)
		p.push(item{kind: itemDone})
	}()
	p.drain()
	abort(nil) // withdraws a permission request a failed run left open
	p.perms.Wait()
	if runErr == nil || res.SessionID != "" {
		s.mu.Lock()
		s.exists = s.exists || res.SessionID != ""
		s.mu.Unlock()
	}
	if runErr != nil && res.Reason == "" {
		if errors.Is(context.Cause(runCtx), runner.ErrAborted) {
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		return sdk.PromptResponse{}, runError(runErr)
	}
	reason, err := stopReason(res)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: reason, Usage: usageOf(res.Usage)}, nil
}

// stopReason maps how a run ended to ACP's stop reason; a failed run is a
// JSON-RPC error whose message is the one people read.
func stopReason(res runner.Result) (sdk.StopReason, error) {
	switch res.Reason {
	case runner.ReasonStop:
		if res.StopReason == llm.StopReasonLength {
			return sdk.StopReasonMaxTokens, nil
		}
		return sdk.StopReasonEndTurn, nil
	case runner.ReasonMaxTurns:
		return sdk.StopReasonMaxTurnRequests, nil
	case runner.ReasonAborted:
		return sdk.StopReasonCancelled, nil
	case runner.ReasonBudgetTokens:
		return sdk.StopReasonMaxTokens, nil
	case runner.ReasonPromptBlocked, runner.ReasonHalted:
		// A hook refused the prompt or stopped the run.
		return sdk.StopReasonRefusal, nil
	}
	msg := res.Message
	if msg == "" && res.Err != nil {
		msg = res.Err.Error()
	}
	if msg == "" {
		msg = "the run failed (" + res.Reason + ")"
	}
	return "", &sdk.RequestError{Code: -32603, Message: msg, Data: map[string]any{"reason": res.Reason}}
}

// runError is a prompt that could not run (its setup failed, the session
// is in use elsewhere) as a JSON-RPC error whose message is the one people
// read: editors show the message, not "Internal error" and data.
func runError(err error) error {
	return &sdk.RequestError{Code: -32603, Message: err.Error(), Data: map[string]any{"error": err.Error()}}
}

func usageOf(u llm.Usage) *sdk.Usage {
	out := &sdk.Usage{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.Total}
	if out.TotalTokens == 0 {
		out.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
	}
	if u.CacheRead > 0 {
		out.CachedReadTokens = sdk.Ptr(u.CacheRead)
	}
	if u.CacheWrite > 0 {
		out.CachedWriteTokens = sdk.Ptr(u.CacheWrite)
	}
	return out
}

// itemKind says what an item of a prompt's queue is.
type itemKind uint8

const (
	itemText itemKind = iota
	itemThought
	itemToolStart
	itemToolUpdate
	itemToolEnd
	itemUsage
	itemAsk
	itemPlan
	itemDone
)

// item is one thing to send, in the run's order: an event's payload
// copied out of it (OnEvent's events are valid only during the call), or
// a permission to ask for.
type item struct {
	kind    itemKind
	text    string
	id      string
	name    string
	args    json.RawMessage
	content []llm.Content
	details json.RawMessage
	isError bool
	usage   llm.Usage
	plan    []sdk.PlanEntry
	ask     *ask
}

// ask is a permission the run waits for.
type ask struct {
	call  tool.Call
	reply chan tool.Answer // buffered: the answer never waits for the asker
	// origin is the subagent task whose call it is; id is the call's
	// tool_call id in the editor (a child's call ids are its session's,
	// and may be the parent's too: they are prefixed with the task).
	origin tool.Origin
	id     string
}

// promptRun is one prompt in progress: the queue that puts the run's
// events and its permission requests in one order, drained by the
// prompt's own goroutine, which alone sends updates.
type promptRun struct {
	s      *sess
	send   func(sdk.SessionUpdate)
	ctx    context.Context // the run's: done once it is aborted or over
	abort  context.CancelCauseFunc
	window int

	mu   sync.Mutex
	cond *sync.Cond
	q    []item

	dmu    sync.Mutex
	denied map[string]bool // calls refused before they ran

	// Only the draining goroutine uses these.
	calls map[string]*callState
	perms sync.WaitGroup
}

// callState is what the editor was told of a call.
type callState struct {
	name  string
	args  callArgs
	diff  bool   // its content is a diff
	title string // "" for toolTitle's
}

// titleText is the call's title in the editor.
func (st *callState) titleText() string {
	if st.title != "" {
		return st.title
	}
	return toolTitle(st.name, st.args)
}

func newPromptRun(s *sess, send func(sdk.SessionUpdate), ctx context.Context, abort context.CancelCauseFunc, window int) *promptRun {
	p := &promptRun{s: s, send: send, ctx: ctx, abort: abort, window: window, denied: map[string]bool{}, calls: map[string]*callState{}}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *promptRun) push(it item) {
	p.mu.Lock()
	p.q = append(p.q, it)
	p.cond.Signal()
	p.mu.Unlock()
}

func (p *promptRun) next() item {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.q) == 0 {
		p.cond.Wait()
	}
	it := p.q[0]
	p.q[0] = item{}
	p.q = p.q[1:]
	return it
}

// onEvent copies what the updates need out of each event, in order. It
// must not block: it runs inside the run's emit.
func (p *promptRun) onEvent(ev runner.Event) {
	switch ev.Type {
	case runner.EventRunStart:
		if ev.Start != nil {
			p.s.setTools(ev.Start.Tools)
		}
		return
	case runner.EventToolsReady:
		if ev.Notice != nil {
			p.s.setTools(ev.Notice.Tools)
		}
		return
	}
	a := ev.Agent
	if a == nil {
		return
	}
	switch a.Type {
	case loop.EventMessageUpdate:
		if a.LLM == nil || a.LLM.Delta == "" {
			return
		}
		switch a.LLM.Type {
		case llm.EventTextDelta:
			p.push(item{kind: itemText, text: a.LLM.Delta})
		case llm.EventThinkingDelta:
			p.push(item{kind: itemThought, text: a.LLM.Delta})
		}
	case loop.EventMessageEnd:
		if a.Message == nil || a.Message.Role != llm.RoleAssistant {
			return
		}
		if plan := planOf(a.Message); plan != nil {
			p.push(item{kind: itemPlan, plan: plan})
		}
		if a.Message.Usage != nil {
			p.push(item{kind: itemUsage, usage: *a.Message.Usage})
		}
	case loop.EventToolExecutionStart:
		p.push(item{kind: itemToolStart, id: a.ToolCallID, name: a.ToolName, args: slices.Clone(a.Args)})
	case loop.EventToolExecutionUpdate:
		if a.Partial != nil {
			p.push(item{kind: itemToolUpdate, id: a.ToolCallID, name: a.ToolName, content: slices.Clone(a.Partial.Content)})
		}
	case loop.EventToolExecutionEnd:
		it := item{kind: itemToolEnd, id: a.ToolCallID, name: a.ToolName}
		if a.Result != nil {
			it.content, it.details, it.isError = slices.Clone(a.Result.Content), slices.Clone(a.Result.Details), a.Result.IsError
		}
		p.push(it)
	}
}

// policy wraps the caller's approval policy: the session's "always"
// answers come first, and a call refused without asking is remembered, so
// it never shows as in progress.
func (p *promptRun) policy(base tool.ApprovalPolicy) tool.ApprovalPolicy {
	if base == nil {
		base = tool.ApproveAuto
	}
	return func(ctx context.Context, call tool.Call, readOnly bool) tool.Decision {
		p.s.mu.Lock()
		rejected, allowed := p.s.rejectAlways[call.Name], p.s.allowAlways[call.Name]
		p.s.mu.Unlock()
		d := base(ctx, call, readOnly)
		switch {
		case d.Verdict == tool.VerdictDeny:
		case rejected:
			d = tool.Decision{Verdict: tool.VerdictDeny, Reason: fmt.Sprintf(
				"Denied by the user: they chose to always reject %s calls in this session. Do not retry it; ask the user how to proceed.", call.Name)}
		case d.Verdict == tool.VerdictAsk && allowed:
			d = tool.Decision{Verdict: tool.VerdictAllow}
		}
		if d.Verdict == tool.VerdictDeny {
			p.deny(call.ID)
		}
		return d
	}
}

func (p *promptRun) deny(id string) {
	p.dmu.Lock()
	p.denied[id] = true
	p.dmu.Unlock()
}

func (p *promptRun) isDenied(id string) bool {
	p.dmu.Lock()
	defer p.dmu.Unlock()
	return p.denied[id]
}

// ask is the run's Asker: the question joins the queue, so the call's
// pending tool_call and everything before it are sent first, and the
// answer comes from the editor.
//
// A subagent's call (its ctx names the task, tool.OriginOf) is asked as a
// tool_call of its own, titled with the task; once answered its card is
// closed, as the child's run is not on this prompt's stream. A background
// child that asks after this prompt ended is refused: nobody can answer.
func (p *promptRun) ask(ctx context.Context, call tool.Call, _ string) (tool.Answer, error) {
	a := &ask{call: call, reply: make(chan tool.Answer, 1), id: call.ID}
	if o, ok := tool.OriginOf(ctx); ok {
		a.origin, a.id = o, o.TaskID+"/"+call.ID
	}
	p.push(item{kind: itemAsk, ask: a})
	select {
	case ans := <-a.reply:
		if ans == tool.AnswerNo {
			p.deny(a.id)
		}
		return ans, nil
	case <-ctx.Done():
		p.deny(a.id)
		return tool.AnswerNo, fmt.Errorf("the permission request was cancelled: %w", context.Cause(ctx))
	case <-p.ctx.Done():
		p.deny(a.id)
		return tool.AnswerNo, errors.New("the prompt that started this agent has ended: nobody can answer its permission request")
	}
}

// drain sends the queue's items as updates until the run is over.
func (p *promptRun) drain() {
	for {
		it := p.next()
		switch it.kind {
		case itemDone:
			return
		case itemText:
			p.send(sdk.UpdateAgentMessageText(it.text))
		case itemThought:
			p.send(sdk.UpdateAgentThoughtText(it.text))
		case itemUsage:
			p.usage(it.usage)
		case itemPlan:
			p.send(sdk.UpdatePlan(it.plan...))
		case itemAsk:
			a := it.ask
			if a.origin.TaskID != "" && p.calls[a.id] == nil {
				st := &callState{name: a.call.Name, args: parseArgs(a.call.Args)}
				st.title = fmt.Sprintf("%s (subagent task %s, %s)", toolTitle(st.name, st.args), a.origin.TaskID, a.origin.Agent)
				p.calls[a.id] = st
				p.send(toolCallUpdate(p.s.info.Cwd, a.id, a.call.Name, a.call.Args, st))
			} else {
				p.announce(a.id, a.call.Name, a.call.Args)
			}
			p.request(a)
		case itemToolStart:
			p.announce(it.id, it.name, it.args)
			if !p.isDenied(it.id) {
				p.send(sdk.UpdateToolCall(sdk.ToolCallId(it.id), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress)))
			}
		case itemToolUpdate:
			if c := resultContent(it.content); len(c) > 0 {
				p.send(sdk.UpdateToolCall(sdk.ToolCallId(it.id), sdk.WithUpdateContent(c)))
			}
		case itemToolEnd:
			p.finishCall(it)
		}
	}
}

// announce sends a call's tool_call, pending, once.
func (p *promptRun) announce(id, name string, args json.RawMessage) {
	if p.calls[id] != nil {
		return
	}
	st := &callState{name: name, args: parseArgs(args)}
	p.calls[id] = st
	p.send(toolCallUpdate(p.s.info.Cwd, id, name, args, st))
}

// toolCallUpdate is the tool_call of a call, pending, with its diffs.
func toolCallUpdate(cwd, id, name string, args json.RawMessage, st *callState) sdk.SessionUpdate {
	opts := []sdk.ToolCallStartOpt{
		sdk.WithStartKind(toolKind(name)), sdk.WithStartStatus(sdk.ToolCallStatusPending),
		sdk.WithStartRawInput(rawInput(args)),
	}
	if l := locations(cwd, st.args); l != nil {
		opts = append(opts, sdk.WithStartLocations(l))
	}
	if d := diffs(cwd, name, st.args); d != nil {
		st.diff = true
		opts = append(opts, sdk.WithStartContent(d))
	}
	return sdk.StartToolCall(sdk.ToolCallId(id), st.titleText(), opts...)
}

// finishCall sends a call's end: completed or failed, with its result. An
// edit that succeeded keeps its diff as its content.
func (p *promptRun) finishCall(it item) {
	st := p.calls[it.id]
	if st == nil { // a call the run ended before it was announced
		st = &callState{name: it.name}
		p.calls[it.id] = st
		p.send(toolCallUpdate(p.s.info.Cwd, it.id, it.name, nil, st))
	}
	p.send(callEnd(it.id, it.content, it.details, it.isError, st.diff))
}

func callEnd(id string, content []llm.Content, details json.RawMessage, isError, diff bool) sdk.SessionUpdate {
	status := sdk.ToolCallStatusCompleted
	if isError {
		status = sdk.ToolCallStatusFailed
	}
	opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(status)}
	if !diff || isError {
		opts = append(opts, sdk.WithUpdateContent(resultContent(content)))
	}
	if len(details) > 0 && json.Valid(details) {
		opts = append(opts, sdk.WithUpdateRawOutput(details))
	}
	return sdk.UpdateToolCall(sdk.ToolCallId(id), opts...)
}

// permissionOptions are the four answers ACP offers.
var permissionOptions = []sdk.PermissionOption{
	{OptionId: "allow_once", Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: "allow_always", Name: "Always allow", Kind: sdk.PermissionOptionKindAllowAlways},
	{OptionId: "reject_once", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
	{OptionId: "reject_always", Name: "Always reject", Kind: sdk.PermissionOptionKindRejectAlways},
}

// request asks the editor on its own goroutine, so the run's other
// updates (a read running beside the call, text still streaming) go on
// while the person decides. Aborting the run withdraws the request (the
// SDK sends $/cancel_request) and refuses the call.
func (p *promptRun) request(a *ask) {
	st := p.calls[a.id]
	tc := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(a.id), Title: sdk.Ptr(st.titleText()),
		Kind: sdk.Ptr(toolKind(st.name)), Status: sdk.Ptr(sdk.ToolCallStatusPending), RawInput: rawInput(a.call.Args),
		Locations: locations(p.s.info.Cwd, st.args), Content: diffs(p.s.info.Cwd, st.name, st.args)}
	req := sdk.RequestPermissionRequest{SessionId: sdk.SessionId(p.s.info.ID), ToolCall: tc, Options: permissionOptions}
	p.perms.Add(1)
	go func() {
		defer p.perms.Done()
		resp, err := p.s.a.conn.RequestPermission(p.ctx, req)
		ans := tool.AnswerNo
		if err == nil && resp.Outcome.Selected != nil {
			switch resp.Outcome.Selected.OptionId {
			case "allow_once":
				ans = tool.AnswerYes
			case "allow_always":
				ans = tool.AnswerYes
				p.s.remember(a.call.Name, true)
			case "reject_always":
				p.s.remember(a.call.Name, false)
			}
		}
		a.reply <- ans
		if a.origin.TaskID != "" { // the child's run goes on elsewhere: its card closes here
			text := "allowed: it runs in subagent task " + a.origin.TaskID
			if ans == tool.AnswerNo {
				text = "refused"
			}
			p.push(item{kind: itemToolEnd, id: a.id, name: a.call.Name, content: []llm.Content{llm.Text(text)}, isError: ans == tool.AnswerNo})
		}
	}()
}

// usage sends the context's size after a model call, and what the
// session cost so far.
func (p *promptRun) usage(u llm.Usage) {
	total := p.s.addUsage(u)
	used := u.Input + u.CacheRead + u.CacheWrite + u.Output
	up := &sdk.SessionUsageUpdate{SessionUpdate: "usage_update", Used: used, Size: p.window}
	if total.Cost.Total > 0 {
		up.Cost = &sdk.Cost{Amount: total.Cost.Total, Currency: "USD"}
	}
	p.send(sdk.SessionUpdate{UsageUpdate: up})
}

func (s *sess) remember(name string, allow bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if allow {
		s.allowAlways[name] = true
		delete(s.rejectAlways, name)
	} else {
		s.rejectAlways[name] = true
		delete(s.allowAlways, name)
	}
}

func (s *sess) addUsage(u llm.Usage) llm.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage.Input += u.Input
	s.usage.Output += u.Output
	s.usage.CacheRead += u.CacheRead
	s.usage.CacheWrite += u.CacheWrite
	s.usage.Total += u.Total
	s.usage.Cost.Total += u.Cost.Total
	return s.usage
}

func (s *sess) setTools(tools []string) {
	s.mu.Lock()
	s.tools = slices.Clone(tools)
	s.mu.Unlock()
}
