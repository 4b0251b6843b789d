package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// turnOut is what one turn produced.
type turnOut struct {
	assistant llm.Message
	results   []llm.Message
	calls     int
	err       error // why the assistant message failed, if it did
	reset     bool  // the reply was cut off and withdrawn, to be asked again
}

// streamItem is one value of the model's stream, handed from the pump
// goroutine to the loop.
type streamItem struct {
	ev  llm.Event
	err error
}

// runTurn makes one model call and carries out the tool calls of its reply.
func (r *run) runTurn() turnOut {
	select { // an interrupt raised before this turn was for messages it injects
	case <-r.a.interrupt:
	default:
	}
	msgs := r.a.history()
	if tc := r.cfg.TransformContext; tc != nil {
		var out []llm.Message
		var err error
		if !r.callHook("transform_context", func() { out, err = tc(r.ctx, msgs) }) && err == nil {
			err = errors.New("the context transform panicked")
		}
		if err != nil {
			return r.failTurn(fmt.Errorf("transform context: %w", err))
		}
		msgs = out
	}
	if f := r.cfg.ToolSpecs; f != nil {
		r.specs = f()
	} else if r.specs == nil && r.cfg.Tools != nil {
		r.specs = r.cfg.Tools.Specs()
	}
	req := &llm.Request{SystemPrompt: r.cfg.SystemPrompt, Messages: msgs, Tools: r.specs, Options: r.cfg.Options}
	if r.raisedMaxTokens > 0 {
		req.Options.MaxTokens = r.raisedMaxTokens
	}
	if h := r.cfg.Hooks.LLMInput; h != nil {
		r.callHook("llm_input", func() { h(r.hookCtx, req) })
	}
	s := newScheduler(r)
	return s.run(req)
}

// failTurn records a turn that failed before the model was called.
func (r *run) failTurn(err error) turnOut {
	m := r.errorMessage(err)
	r.emit(Event{Type: EventMessageStart, Turn: r.turn, Message: &m})
	r.a.appendMessage(m)
	r.added = append(r.added, m)
	r.emit(Event{Type: EventMessageEnd, Turn: r.turn, Message: &m})
	return turnOut{assistant: m, err: err}
}

// errorMessage is the assistant message standing for a call that failed
// before its first event.
func (r *run) errorMessage(err error) llm.Message {
	reason := llm.StopReasonError
	if r.ctx.Err() != nil || errors.Is(err, context.Canceled) {
		reason = llm.StopReasonAborted
	}
	return llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{}, StopReason: reason,
		ErrorMessage: err.Error(), Timestamp: r.cfg.Now()}
}

// Causes of cancelling a call, and the results they leave.
var (
	errSibling     = errors.New("cancelled: a sibling bash command failed")
	errInterrupted = errors.New("cancelled: the user interrupted with a new message")
	errStreamFail  = errors.New("stream failed")
)

type callState int

const (
	callPending callState = iota // known, not started
	callRunning
	callDone
)

// call is one tool call of the turn.
type call struct {
	index    int // content index in the assistant message
	block    llm.Content
	prepared tool.Call
	tool     tool.Tool
	safe     bool
	par      bool // parallel class: beside others, once the message is complete
	hooked   bool // Approve and BeforeToolCall have run
	state    callState
	started  bool // tool_execution_start was emitted
	ran      bool // the tool was run (start), whatever its result
	ctx      context.Context
	cancel   context.CancelCauseFunc
	result   tool.Result
}

type toolMsg struct {
	c       *call
	partial *tool.Partial
	res     tool.Result
	done    bool
}

// scheduler runs the tool calls of one turn, fed by the stream.
type scheduler struct {
	r       *run
	calls   []*call
	byIndex map[int]*call

	running   int
	exclusive bool  // an exclusive call is running
	msgDone   bool  // the assistant message completed successfully
	allExcl   bool  // run every call alone (non-streaming mode with an exclusive call)
	skip      error // calls not started are skipped with this cause
	streamErr error
	reset     bool // the final message was withdrawn (retry_reset)

	toolc chan toolMsg
	done  chan struct{}
	ctx   context.Context // parent of the calls' contexts
	stop  context.CancelFunc
	cur   llm.Event // the stream event being reported
}

func newScheduler(r *run) *scheduler {
	ctx, stop := context.WithCancel(r.ctx)
	return &scheduler{r: r, byIndex: make(map[int]*call), toolc: make(chan toolMsg, 16),
		done: make(chan struct{}), ctx: ctx, stop: stop}
}

func (s *scheduler) streaming() bool { return !s.r.cfg.DisableStreamingTools }

// run streams the reply and carries out its tool calls until everything
// has settled.
func (s *scheduler) run(req *llm.Request) turnOut {
	r := s.r
	defer s.stop()
	defer close(s.done)

	ch := make(chan streamItem)
	ack := make(chan struct{})
	go pump(s.ctx, r.cfg.Model, req, ch, ack)
	var evc <-chan streamItem = ch

	var (
		assistant llm.Message
		final     bool
		started   bool
		open      = true
	)
	for open || s.running > 0 {
		select {
		case it, ok := <-evc:
			if !ok {
				open, evc = false, nil
				if !final {
					assistant, final = s.finish(nil, errStreamEnded, started), true
				}
				s.schedule()
				continue
			}
			if it.err != nil {
				assistant, final = s.finish(nil, it.err, started), true
			} else {
				switch ev := it.ev; ev.Type {
				case llm.EventStart:
					started = true
					r.emit(Event{Type: EventMessageStart, Turn: r.turn, Message: startMessage(ev)})
				case llm.EventDone, llm.EventError:
					assistant, final = s.finish(ev.Message, ev.Err, started), true
				default:
					if !started { // a stream that skipped start
						started = true
						r.emit(Event{Type: EventMessageStart, Turn: r.turn, Message: startMessage(ev)})
					}
					s.cur = ev // reused: an update's LLM event is valid during the handler only
					r.emit(Event{Type: EventMessageUpdate, Turn: r.turn, LLM: &s.cur})
					if ev.Type == llm.EventToolCallEnd && s.streaming() && ev.Block != nil {
						s.arrive(ev.ContentIndex, *ev.Block)
						s.schedule()
					}
				}
			}
			ack <- struct{}{}
		case m := <-s.toolc:
			s.toolMsg(m)
		case <-r.a.interrupt:
			s.cancelAll(errInterrupted)
		}
	}
	return s.collect(assistant)
}

// pump runs the model's stream on its own goroutine, so the loop can
// serve tool completions while the model talks. Each event is handed over
// and acknowledged before the next is produced: the producer's partial
// message is never read and written at once.
func pump(ctx context.Context, m llm.Model, req *llm.Request, evc chan<- streamItem, ack <-chan struct{}) {
	defer close(evc)
	defer func() {
		if p := recover(); p != nil { // a broken model fails its turn, not the process
			evc <- streamItem{err: fmt.Errorf("the model's stream panicked: %v", p)}
			<-ack
		}
	}()
	for ev, err := range m.Stream(ctx, req) {
		evc <- streamItem{ev, err}
		<-ack
		if err != nil || ev.Type.Terminal() {
			return
		}
	}
}

// startMessage is the assistant message of message_start: a copy of the
// producer's partial, so handlers may keep it.
func startMessage(ev llm.Event) *llm.Message {
	if ev.Partial != nil {
		m := ev.Partial.Clone()
		return &m
	}
	return &llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{}}
}

// finish records the final assistant message (or builds one for a call
// that failed before its first event) and settles the calls accordingly.
func (s *scheduler) finish(msg *llm.Message, err error, started bool) llm.Message {
	r := s.r
	var m llm.Message
	switch {
	case msg != nil:
		m = msg.Clone()
		if m.Timestamp == 0 {
			m.Timestamp = r.cfg.Now()
		}
		if m.StopReason.Failed() && err == nil {
			err = errors.New(orText(m.ErrorMessage, "the model call failed"))
		}
	default:
		if err == nil {
			err = errStreamEnded
		}
		m = r.errorMessage(err)
	}
	if limit := r.escalation(m); limit > 0 && started {
		// Withdrawn before message_end: it never joins the conversation.
		r.resetCutOff(m, limit)
		s.reset = true
		return m
	}
	if !started {
		r.emit(Event{Type: EventMessageStart, Turn: r.turn, Message: &m})
	}
	r.a.appendMessage(m)
	r.added = append(r.added, m)
	r.emit(Event{Type: EventMessageEnd, Turn: r.turn, Message: &m})
	if h := r.cfg.Hooks.LLMOutput; h != nil {
		r.callHook("llm_output", func() { h(r.hookCtx, m) })
	}
	if m.StopReason.Failed() {
		s.streamErr = err
		// Calls the stream completed stay known; calls it cut off get
		// their result from collect.
		if r.ctx.Err() != nil || m.StopReason == llm.StopReasonAborted {
			s.cancelAll(context.Canceled)
		} else {
			s.cancelAll(errStreamFail)
		}
		return m
	}
	s.msgDone = true
	for i := range m.Content {
		if c := m.Content[i]; c.Type == llm.ContentToolCall {
			if _, seen := s.byIndex[i]; !seen {
				s.arrive(i, c)
			}
		}
	}
	if !s.streaming() {
		for _, c := range s.calls {
			if c.state == callPending && !c.safe && !c.par {
				s.allExcl = true
			}
		}
	}
	return m
}

func orText(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// arrive takes charge of a tool call whose block is complete: it checks
// the arguments; the call waits for schedule to start it.
func (s *scheduler) arrive(index int, block llm.Content) {
	c := &call{index: index, block: block}
	s.calls = append(s.calls, c)
	s.byIndex[index] = c
	c.prepared = tool.Call{ID: block.ID, Name: block.Name, Args: block.Arguments}
	if !isObject(block.Arguments) {
		s.settle(c, incompleteResult(block))
		return
	}
	prepared, bad := s.r.cfg.Tools.Prepare(block)
	c.prepared = prepared
	if bad != nil {
		s.settle(c, *bad)
		return
	}
	c.tool, _ = s.r.cfg.Tools.Get(prepared.Name)
	c.safe = s.r.cfg.Tools.ConcurrencySafe(prepared)
	c.par = s.r.cfg.Tools.Parallel(prepared)
	if s.skip != nil {
		s.settle(c, s.skipResult())
	}
}

func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '{'
}

func incompleteResult(b llm.Content) tool.Result {
	return tool.ErrorResult(fmt.Sprintf("Invalid arguments for tool %q: the arguments were incomplete or not a JSON object "+
		"(the reply was probably cut off), so the call was not run.\n\nReceived: %s\n\nCall the tool again with complete arguments.",
		b.Name, string(b.Arguments)))
}

// schedule starts what may start, in the model's order: concurrency-safe
// calls at once (up to the cap, never beside an exclusive call), exclusive
// calls once the message is complete (or early with EarlyExclusive), each
// alone. A call that may not start yet holds back the calls after it.
func (s *scheduler) schedule() {
	cfg := s.r.cfg
	for _, c := range s.calls {
		if c.state != callPending {
			continue
		}
		if s.skip != nil {
			s.settle(c, s.skipResult())
			continue
		}
		excl := !c.safe && !c.par || s.allExcl
		if excl && !s.msgDone && !cfg.EarlyExclusive || c.par && !s.msgDone {
			return
		}
		if !s.streaming() && !s.msgDone {
			return
		}
		if !c.hooked {
			if !s.runHooks(c) {
				continue // blocked: settled
			}
			excl = !c.safe && !c.par || s.allExcl
			if excl && !s.msgDone && !cfg.EarlyExclusive {
				return
			}
		}
		if s.exclusive || s.running >= cfg.MaxConcurrentTools || excl && s.running > 0 {
			return
		}
		s.start(c, excl)
		if excl {
			return
		}
	}
}

// runHooks runs Approve and BeforeToolCall for c; false means the call was
// blocked and has its result.
func (s *scheduler) runHooks(c *call) bool {
	r := s.r
	c.hooked = true
	if h := r.cfg.Hooks.Approve; h != nil {
		allow, reason := false, ""
		if !r.callHook("approve", func() { allow, reason = h(r.hookCtx, c.prepared) }) {
			allow, reason = false, "the approval hook failed"
		}
		if !allow {
			s.settle(c, denied(reason))
			return false
		}
	}
	if h := r.cfg.Hooks.BeforeToolCall; h != nil {
		var next tool.Call
		var block *tool.Result
		if !r.callHook("before_tool_call", func() { next, block = h(r.hookCtx, c.prepared) }) {
			res := tool.ErrorResult("Tool call blocked because the before_tool_call hook failed.")
			block = &res
		}
		if block != nil {
			s.settle(c, *block)
			return false
		}
		if next.ID == "" {
			next.ID = c.prepared.ID
		}
		if next.Name == "" {
			next.Name = c.prepared.Name
		}
		if next.Name != c.prepared.Name || !bytes.Equal(next.Args, c.prepared.Args) {
			prepared, bad := r.cfg.Tools.Prepare(llm.ToolCall(next.ID, next.Name, next.Args))
			if bad != nil {
				s.settle(c, *bad)
				return false
			}
			c.prepared = prepared
			c.tool, _ = r.cfg.Tools.Get(prepared.Name)
			c.safe = r.cfg.Tools.ConcurrencySafe(prepared)
			c.par = r.cfg.Tools.Parallel(prepared)
		}
	}
	return true
}

func denied(reason string) tool.Result {
	if reason == "" {
		return tool.ErrorResult("Tool call denied by the approval policy.")
	}
	return tool.ErrorResult("Tool call denied: " + reason)
}

// start runs c on its own goroutine.
func (s *scheduler) start(c *call, excl bool) {
	r := s.r
	c.state = callRunning
	c.ran = true
	s.running++
	s.exclusive = excl
	s.emitStart(c)
	c.ctx, c.cancel = context.WithCancelCause(s.ctx)
	update := func(p tool.Partial) {
		select {
		case s.toolc <- toolMsg{c: c, partial: &p}:
		case <-s.done:
		}
	}
	go func() {
		res := r.cfg.Tools.Run(c.ctx, c.prepared, update)
		s.toolc <- toolMsg{c: c, res: res, done: true}
	}()
}

func (s *scheduler) emitStart(c *call) {
	if c.started {
		return
	}
	c.started = true
	s.r.emit(Event{Type: EventToolExecutionStart, Turn: s.r.turn, ToolCallID: c.prepared.ID, ToolName: c.prepared.Name, Args: c.prepared.Args})
}

// toolMsg handles a running call's progress or completion.
func (s *scheduler) toolMsg(m toolMsg) {
	c := m.c
	if !m.done {
		if c.state == callRunning {
			s.r.emit(Event{Type: EventToolExecutionUpdate, Turn: s.r.turn, ToolCallID: c.prepared.ID, ToolName: c.prepared.Name, Partial: m.partial})
		}
		return
	}
	s.running--
	if s.running == 0 {
		s.exclusive = false
	}
	res := m.res
	cause := context.Cause(c.ctx)
	c.cancel(nil)
	if res.IsError && cause != nil {
		res = s.cancelledResult(cause, res)
	}
	s.settle(c, res)
	if res.IsError && cause == nil && c.tool != nil && s.r.cfg.CascadeOnFailure(c.tool, c.prepared) {
		s.cancelAll(errSibling)
	}
	s.schedule()
}

// cancelAll cancels the running calls with cause and makes the calls not
// started skip with it.
func (s *scheduler) cancelAll(cause error) {
	if s.skip == nil {
		s.skip = cause
	}
	for _, c := range s.calls {
		if c.state == callRunning {
			c.cancel(cause)
		}
	}
	s.schedule()
}

// cancelledResult is the result of a call cancelled with cause.
func (s *scheduler) cancelledResult(cause error, res tool.Result) tool.Result {
	switch {
	case errors.Is(cause, errSibling), errors.Is(cause, errInterrupted):
		return tool.ErrorResult(cause.Error())
	case errors.Is(cause, errStreamFail):
		return tool.ErrorResult(fmt.Sprintf("cancelled: the model's reply failed while this call was running (%v)", s.streamErr))
	}
	return res
}

// skipResult is the result of a call that never started.
func (s *scheduler) skipResult() tool.Result {
	switch {
	case errors.Is(s.skip, errSibling), errors.Is(s.skip, errInterrupted):
		return tool.ErrorResult(s.skip.Error())
	case errors.Is(s.skip, errStreamFail):
		return tool.ErrorResult(fmt.Sprintf("not run: the model's reply failed before this call could start (%v)", s.streamErr))
	}
	return tool.AbortedResult(nil)
}

// settle gives c its result and reports it.
func (s *scheduler) settle(c *call, res tool.Result) {
	r := s.r
	c.state = callDone
	if res.Content == nil {
		res.Content = []llm.Content{}
	}
	c.result = res
	s.emitStart(c)
	r.emit(Event{Type: EventToolExecutionEnd, Turn: r.turn, ToolCallID: c.prepared.ID, ToolName: c.prepared.Name, Result: &c.result})
	if h := r.cfg.Hooks.AfterToolCall; h != nil {
		r.callHook("after_tool_call", func() { h(r.hookCtx, c.prepared, res) })
	}
}

// collect gives every tool call of the final message its result, in the
// model's order, and appends them.
func (s *scheduler) collect(assistant llm.Message) turnOut {
	r := s.r
	out := turnOut{assistant: assistant, reset: s.reset}
	if assistant.StopReason.Failed() {
		out.err = s.streamErr
	}
	for i := range assistant.Content {
		b := assistant.Content[i]
		if b.Type != llm.ContentToolCall {
			continue
		}
		out.calls++
		c, ok := s.byIndex[i]
		if ok && c.block.ID != b.ID {
			if alt := s.findByID(b.ID); alt != nil {
				c = alt
			}
		} else if !ok {
			c = s.findByID(b.ID)
		}
		if c == nil {
			// The stream cut this call off (or it was never scheduled).
			c = &call{index: i, block: b, prepared: tool.Call{ID: b.ID, Name: b.Name, Args: b.Arguments}}
			s.calls = append(s.calls, c)
			switch {
			case r.ctx.Err() != nil || assistant.StopReason == llm.StopReasonAborted:
				s.settle(c, tool.AbortedResult(nil))
			case !isObject(b.Arguments):
				s.settle(c, incompleteResult(b))
			case s.skip != nil:
				s.settle(c, s.skipResult())
			default:
				s.settle(c, tool.ErrorResult("not run: the call was never scheduled"))
			}
		} else if c.state != callDone {
			s.settle(c, s.skipResult())
		}
		res := c.result
		if h := r.cfg.Hooks.ToolResultPersist; h != nil {
			in := res
			ctx := tool.WithExecuted(r.hookCtx, c.ran)
			r.callHook("tool_result_persist", func() { res = h(ctx, c.prepared, in) })
		}
		msg := res.Message(orText(c.prepared.ID, b.ID), orText(c.prepared.Name, b.Name))
		msg.Timestamp = r.cfg.Now()
		r.addMessage(msg)
		out.results = append(out.results, msg)
	}
	return out
}

func (s *scheduler) findByID(id string) *call {
	if id == "" {
		return nil
	}
	for _, c := range s.calls {
		if c.block.ID == id {
			return c
		}
	}
	return nil
}
