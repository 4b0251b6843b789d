package wrap

import (
	"iter"

	"github.com/agentloop/agentloop/llm"
)

// relay re-emits a stream with a message of its own, so a layer can add,
// drop and rewrite blocks while content indexes, Partial and the final
// message stay consistent.
type relay struct {
	yield   func(llm.Event, error) bool
	msg     llm.Message
	open    []bool
	stopped bool
	// idx maps the inner stream's content indexes to ours for the blocks
	// passed through; a missing entry is a block the layer handles itself.
	idx map[int]int
}

func newRelay(yield func(llm.Event, error) bool) *relay {
	return &relay{yield: yield, idx: map[int]int{}, msg: llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{}}}
}

func (r *relay) emit(e llm.Event) bool {
	if r.stopped {
		return false
	}
	e.Partial = &r.msg
	if !r.yield(e, nil) {
		r.stopped = true
	}
	return !r.stopped
}

// start copies the inner message's metadata and emits start.
func (r *relay) start(ev llm.Event) bool {
	if ev.Partial != nil {
		r.msg = *ev.Partial
		r.msg.Content = make([]llm.Content, 0, len(ev.Partial.Content)+2)
	}
	return r.emit(llm.Event{Type: llm.EventStart})
}

func startType(t llm.ContentType) llm.EventType {
	switch t {
	case llm.ContentThinking:
		return llm.EventThinkingStart
	case llm.ContentToolCall:
		return llm.EventToolCallStart
	}
	return llm.EventTextStart
}

func deltaType(t llm.ContentType) llm.EventType {
	switch t {
	case llm.ContentThinking:
		return llm.EventThinkingDelta
	case llm.ContentToolCall:
		return llm.EventToolCallDelta
	}
	return llm.EventTextDelta
}

func endType(t llm.ContentType) llm.EventType {
	switch t {
	case llm.ContentThinking:
		return llm.EventThinkingEnd
	case llm.ContentToolCall:
		return llm.EventToolCallEnd
	}
	return llm.EventTextEnd
}

// begin appends a block and emits its _start event.
func (r *relay) begin(c llm.Content) (int, bool) {
	i := len(r.msg.Content)
	r.msg.Content = append(r.msg.Content, c)
	r.open = append(r.open, true)
	return i, r.emit(llm.Event{Type: startType(c.Type), ContentIndex: i})
}

// delta emits a delta for block i, whose content the caller has updated.
func (r *relay) delta(i int, d string) bool {
	return r.emit(llm.Event{Type: deltaType(r.msg.Content[i].Type), ContentIndex: i, Delta: d})
}

// end closes block i and emits its _end event with the finished block.
func (r *relay) end(i int) bool {
	if !r.open[i] {
		return true
	}
	r.open[i] = false
	b := r.msg.Content[i]
	return r.emit(llm.Event{Type: endType(b.Type), ContentIndex: i, Block: &b})
}

// pass forwards a block event of the inner stream unchanged but for its
// index. rewrite, if not nil, returns the block as it is to be stored.
func (r *relay) pass(ev llm.Event, rewrite func(llm.Content) llm.Content) bool {
	in := ev.ContentIndex
	switch ev.Type {
	case llm.EventTextStart, llm.EventThinkingStart, llm.EventToolCallStart:
		c := blockOf(ev)
		if rewrite != nil {
			c = rewrite(c)
		}
		j, ok := r.begin(c)
		r.idx[in] = j
		return ok
	case llm.EventTextDelta, llm.EventThinkingDelta, llm.EventToolCallDelta:
		j, ok := r.idx[in]
		if !ok {
			return true
		}
		c := blockOf(ev)
		if rewrite != nil {
			c = rewrite(c)
		}
		r.msg.Content[j] = c
		return r.delta(j, ev.Delta)
	case llm.EventTextEnd, llm.EventThinkingEnd, llm.EventToolCallEnd:
		j, ok := r.idx[in]
		if !ok {
			return true
		}
		c := blockOf(ev)
		if ev.Block != nil {
			c = *ev.Block
		}
		if rewrite != nil {
			c = rewrite(c)
		}
		r.msg.Content[j] = c
		return r.end(j)
	}
	return true
}

// blockOf is the inner block an event is about, as the inner stream holds
// it now.
func blockOf(ev llm.Event) llm.Content {
	if ev.Partial != nil && ev.ContentIndex >= 0 && ev.ContentIndex < len(ev.Partial.Content) {
		return ev.Partial.Content[ev.ContentIndex]
	}
	if ev.Block != nil {
		return *ev.Block
	}
	return llm.Content{}
}

// finish emits the terminal event: the inner final message with our
// content. Blocks passed through and still open (a failed stream) take
// their final form from the inner message; rewrite adjusts them as pass
// does. reason, if set, replaces a successful stream's stop reason.
func (r *relay) finish(ev llm.Event, reason llm.StopReason, rewrite func(llm.Content) llm.Content) {
	if ev.Message != nil {
		for in, j := range r.idx {
			if r.open[j] && in < len(ev.Message.Content) {
				c := ev.Message.Content[in]
				if rewrite != nil {
					c = rewrite(c)
				}
				r.msg.Content[j] = c
			}
		}
		final := ev.Message.Clone()
		final.Content = r.msg.Content
		r.msg = final
	}
	if reason != "" && ev.Type == llm.EventDone {
		r.msg.StopReason = reason
		ev.Reason = reason
	}
	ev.Message = &r.msg
	ev.Partial = nil
	r.emit(ev)
}

// bare forwards an error that came before any event.
func (r *relay) bare(ev llm.Event, err error) {
	if r.stopped {
		return
	}
	r.stopped = true
	r.yield(ev, err)
}

// passAll forwards a whole stream, block events through pass.
func (r *relay) passAll(in iter.Seq2[llm.Event, error], rewrite func(llm.Content) llm.Content) {
	for ev, err := range in {
		if err != nil {
			r.bare(ev, err)
			return
		}
		switch ev.Type {
		case llm.EventStart:
			r.start(ev)
		case llm.EventDone, llm.EventError:
			r.finish(ev, "", rewrite)
			return
		default:
			r.pass(ev, rewrite)
		}
		if r.stopped {
			return
		}
	}
}
