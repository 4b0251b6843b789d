package faux

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
)

// Default model metadata, the same as pi's faux provider.
const (
	DefaultID            = "faux-1"
	DefaultContextWindow = 128_000
	DefaultMaxTokens     = 16_384
)

// Model is a scripted llm.Model. Build it with New (or Load, Parse,
// Builtin); it is safe for concurrent use, each Stream call taking the next
// step of the script.
type Model struct {
	// Info describes the model; zero fields get the defaults above, and
	// Provider "faux" and API faux.
	Info llm.ModelInfo
	// Repeat starts the script over when it runs out, instead of failing.
	Repeat bool
	// Now stamps messages (Unix ms); nil means the wall clock. Tests set it
	// for deterministic transcripts.
	Now func() int64

	mu       sync.Mutex
	steps    []Step
	next     int
	calls    int
	requests []llm.Request
}

// New returns a model playing steps, one per Stream call.
func New(steps ...Step) *Model {
	m := &Model{steps: steps}
	m.Info = defaultInfo(DefaultID)
	return m
}

func defaultInfo(id string) llm.ModelInfo {
	return llm.ModelInfo{
		ID: id, Name: "Faux " + id, Provider: "faux", API: llm.APIFaux,
		ContextWindow: DefaultContextWindow, MaxTokens: DefaultMaxTokens,
		Input: []string{"text", "image"},
	}
}

// Append adds steps to the end of the script.
func (m *Model) Append(steps ...Step) {
	m.mu.Lock()
	m.steps = append(m.steps, steps...)
	m.mu.Unlock()
}

// Calls returns how many times Stream has been called.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Pending returns how many canned steps are left (0 for a repeating
// script that has started over).
func (m *Model) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps) - m.next
}

// Requests returns the requests received, in order. Their Messages slices
// share the caller's messages: callers that mutate messages in place after
// a call will see that here.
func (m *Model) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.requests...)
}

// ModelInfo returns the model's metadata with defaults filled in.
func (m *Model) ModelInfo() llm.ModelInfo {
	info := m.Info
	d := defaultInfo(info.ID)
	if info.ID == "" {
		d = defaultInfo(DefaultID)
		info.ID = d.ID
	}
	if info.Name == "" {
		info.Name = d.Name
	}
	if info.Provider == "" {
		info.Provider = d.Provider
	}
	if info.API == "" {
		info.API = d.API
	}
	if info.ContextWindow == 0 {
		info.ContextWindow = d.ContextWindow
	}
	if info.MaxTokens == 0 {
		info.MaxTokens = d.MaxTokens
	}
	if info.Input == nil {
		info.Input = d.Input
	}
	return info
}

func (m *Model) now() int64 {
	if m.Now != nil {
		return m.Now()
	}
	return llm.NowMillis()
}

// take records a call and returns its step and number (1-based).
func (m *Model) take(req *llm.Request) (Step, int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	r := *req
	r.Messages = req.Messages[:len(req.Messages):len(req.Messages)]
	m.requests = append(m.requests, r)
	if m.next >= len(m.steps) && m.Repeat && len(m.steps) > 0 {
		m.next = 0
	}
	if m.next >= len(m.steps) {
		return Step{}, m.calls, false
	}
	s := m.steps[m.next]
	m.next++
	return s, m.calls, true
}

// Stream plays the next step of the script as a stream of events.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		info := m.ModelInfo()
		step, n, ok := m.take(req)
		if !ok {
			yield(llm.Event{}, &llm.ProviderError{
				Provider: info.Provider, Model: info.ID, Reason: llm.ReasonFormat,
				Message: fmt.Sprintf("faux: the script has no reply left for call %d (it has %d steps); add steps or set repeat", n, n-1),
			})
			return
		}
		if err := ctx.Err(); err != nil {
			yield(llm.Event{}, err)
			return
		}
		prompt := EstimateRequest(req)
		if info.ContextWindow > 0 && prompt > info.ContextWindow {
			yield(llm.Event{}, &llm.ProviderError{
				Provider: info.Provider, Model: info.ID, Status: 400, Reason: llm.ReasonContextOverflow,
				Message: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", prompt, info.ContextWindow),
			})
			return
		}
		if step.Func != nil {
			step = step.Func(ctx, req)
			step.Func = nil
		}
		if step.Err != nil && step.Err.BeforeStart {
			yield(llm.Event{}, step.Err.providerError(&info))
			return
		}
		p := player{m: m, ctx: ctx, yield: yield, step: &step, info: &info, call: n}
		p.play(prompt)
	}
}

// player streams one step.
type player struct {
	m     *Model
	ctx   context.Context
	yield func(llm.Event, error) bool
	step  *Step
	info  *llm.ModelInfo
	call  int
	msg   llm.Message
	out   int // output characters, for usage
	chunk int // chunk counter, cycles the chunk sizes
}

// chunkSizes cycle so deltas have varied, deterministic lengths (pi cuts
// 3-5 tokens of 4 characters).
var chunkSizes = [...]int{12, 20, 16}

// argChunkSizes split tool arguments mid-JSON.
var argChunkSizes = [...]int{7, 11, 5, 13}

// wait sleeps d honouring cancellation; false means cancelled.
func (p *player) wait(d time.Duration) bool {
	if d <= 0 {
		return p.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}

func (p *player) emit(ev llm.Event) bool {
	ev.Partial = &p.msg
	return p.yield(ev, nil)
}

func (p *player) play(prompt int) {
	p.msg = llm.Message{
		Role: llm.RoleAssistant, Provider: p.info.Provider, Model: p.info.ID, API: string(p.info.API),
		Content: make([]llm.Content, 0, len(p.step.Content)), Timestamp: p.m.now(),
	}
	if !p.emit(llm.Event{Type: llm.EventStart}) {
		return
	}
	hasCall := false
	for i, b := range p.step.Content {
		var ok bool
		switch b.Type {
		case llm.ContentText, llm.ContentThinking:
			ok = p.playText(i, b)
		case llm.ContentToolCall:
			hasCall = true
			ok = p.playToolCall(i, b)
		default:
			p.msg.Content = append(p.msg.Content, b)
			ok = true
		}
		if !ok {
			return
		}
	}
	if !p.wait(p.step.Tail) {
		p.abort()
		return
	}
	if p.step.Hold != nil {
		select {
		case <-p.step.Hold:
		case <-p.ctx.Done():
			p.abort()
			return
		}
	}
	p.msg.Usage = p.usage(prompt)
	if f := p.step.Err; f != nil {
		pe := f.providerError(p.info)
		p.msg.StopReason = llm.StopReasonError
		p.msg.ErrorMessage = pe.Message
		final := p.msg.Clone()
		p.yield(llm.Event{Type: llm.EventError, Reason: llm.StopReasonError, Message: &final, Err: pe, Partial: &final}, nil)
		return
	}
	reason := p.step.StopReason
	if reason == "" {
		reason = llm.StopReasonStop
		if hasCall {
			reason = llm.StopReasonToolUse
		}
	}
	p.msg.StopReason = reason
	final := p.msg.Clone()
	p.yield(llm.Event{Type: llm.EventDone, Reason: reason, Message: &final, Partial: &final}, nil)
}

func (p *player) usage(prompt int) *llm.Usage {
	if p.step.Usage != nil {
		u := *p.step.Usage
		return &u
	}
	u := llm.Usage{Input: prompt, Output: (p.out + 3) / 4}
	u.ComputeTotal()
	u.ApplyPrices(p.info.Cost)
	return &u
}

// abort ends the stream as a cancelled provider call does: an error event
// with StopReason aborted keeping the content streamed so far.
func (p *player) abort() {
	for i := range p.msg.Content {
		c := &p.msg.Content[i]
		if c.Type == llm.ContentToolCall && !jsonpartial.IsInvalid(c.Arguments) {
			if args, err := jsonpartial.Strict(c.Arguments); err == nil {
				c.Arguments = args
			} else {
				c.Arguments = jsonpartial.Invalid(c.Arguments)
			}
		}
	}
	p.msg.StopReason = llm.StopReasonAborted
	p.msg.ErrorMessage = "the request was aborted"
	p.msg.Usage = p.usage(0)
	final := p.msg.Clone()
	p.yield(llm.Event{Type: llm.EventError, Reason: llm.StopReasonAborted, Message: &final, Err: p.ctx.Err(), Partial: &final}, nil)
}

func (p *player) playText(i int, b llm.Content) bool {
	thinking := b.Type == llm.ContentThinking
	start, delta, end := llm.EventTextStart, llm.EventTextDelta, llm.EventTextEnd
	s := b.Text
	block := llm.Content{Type: b.Type, TextSignature: b.TextSignature}
	if thinking {
		start, delta, end = llm.EventThinkingStart, llm.EventThinkingDelta, llm.EventThinkingEnd
		s = b.Thinking
		block = llm.Content{Type: b.Type, ThinkingSignature: b.ThinkingSignature, Redacted: b.Redacted}
	}
	p.msg.Content = append(p.msg.Content, block)
	if !p.emit(llm.Event{Type: start, ContentIndex: i}) {
		return false
	}
	for len(s) > 0 {
		if !p.wait(p.step.Delay) {
			p.abort()
			return false
		}
		n := chunkSizes[p.chunk%len(chunkSizes)]
		p.chunk++
		if n > len(s) {
			n = len(s)
		}
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		d := s[:n]
		s = s[n:]
		c := &p.msg.Content[i]
		if thinking {
			c.Thinking += d
		} else {
			c.Text += d
		}
		p.out += len(d)
		if !p.emit(llm.Event{Type: delta, ContentIndex: i, Delta: d}) {
			return false
		}
	}
	done := p.msg.Content[i]
	return p.emit(llm.Event{Type: end, ContentIndex: i, Block: &done})
}

func (p *player) playToolCall(i int, b llm.Content) bool {
	id := b.ID
	if id == "" {
		id = fmt.Sprintf("call_%d_%d", p.call, i)
	}
	raw := string(b.Arguments)
	if raw == "" {
		raw = "{}"
	}
	p.msg.Content = append(p.msg.Content, llm.Content{
		Type: llm.ContentToolCall, ID: id, Name: b.Name, Arguments: json.RawMessage("{}"),
		ThoughtSignature: b.ThoughtSignature,
	})
	if !p.emit(llm.Event{Type: llm.EventToolCallStart, ContentIndex: i}) {
		return false
	}
	sent := 0
	for k := 0; sent < len(raw); k++ {
		if !p.wait(p.step.Delay) {
			// What arrived so far is an incomplete call.
			p.msg.Content[i].Arguments = json.RawMessage(raw[:sent])
			p.abort()
			return false
		}
		n := argChunkSizes[k%len(argChunkSizes)]
		if sent+n > len(raw) {
			n = len(raw) - sent
		}
		d := raw[sent : sent+n]
		sent += n
		p.out += n
		p.msg.Content[i].Arguments = jsonpartial.Parse([]byte(raw[:sent]))
		if !p.emit(llm.Event{Type: llm.EventToolCallDelta, ContentIndex: i, Delta: d}) {
			return false
		}
	}
	args, err := jsonpartial.Strict([]byte(raw))
	if err != nil {
		args = jsonpartial.Invalid([]byte(raw))
	}
	p.msg.Content[i].Arguments = args
	done := p.msg.Content[i]
	return p.emit(llm.Event{Type: llm.EventToolCallEnd, ContentIndex: i, Block: &done})
}
