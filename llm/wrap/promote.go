package wrap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
)

// PromoteTextToolCalls returns the layer that turns tool calls a model
// wrote as text into real toolCall blocks (layer 3). It knows these forms:
//
//	<tool_call>{"name": "read", "arguments": {...}}</tool_call>   (Hermes, Qwen)
//	<function=read>{...}</function>                               (Llama)
//	[TOOL_CALLS][{"name": "read", "arguments": {...}}]            (Mistral)
//	```json\n{"name": "read", "arguments": {...}}\n```            (a fenced object)
//	{"name": "read", "arguments": {...}}                          (a text block that is only the object)
//
// "parameters", "args" and "input" are accepted for "arguments", and
// arguments encoded as a JSON string. A call is promoted only when it names
// an offered tool (as MatchToolName finds it; the block gets the offered
// name). The fenced and bare forms must be strictly valid JSON and carry
// arguments, so that a JSON answer that merely has a "name" field is not
// taken for a call. A tagged call (<tool_call>, <function=...>,
// [TOOL_CALLS]) whose JSON does not parse still becomes a call, with its
// arguments marked invalid (jsonpartial.Invalid): the model clearly meant
// a call, so it is answered with an error that quotes its text instead of
// being ignored, and the call is never run.
//
// Text that may begin such a call is held back until the call is complete
// or proves not to be one; other text streams through at once. A reply
// that stopped and had calls promoted ends as toolUse. Without offered
// tools the layer passes the stream through.
func PromoteTextToolCalls() Middleware {
	return func(inner llm.Model) llm.Model {
		return layer(inner, func(ctx context.Context, req *llm.Request, in iter.Seq2[llm.Event, error], r *relay) {
			offered := offeredNames(req)
			if len(offered) == 0 {
				r.passAll(in, nil)
				return
			}
			(&promoteLayer{r: r, offered: offered, blocks: map[int]*promoBlock{}}).run(in)
		})
	}
}

// The kinds of text that may hold a call.
const (
	kindNone = iota
	kindTag
	kindFunc
	kindMistral
	kindFence
	kindBare
)

var markers = []struct {
	open  string
	bytes []byte
	kind  int
}{
	{"<tool_call>", []byte("<tool_call>"), kindTag},
	{"<function=", []byte("<function="), kindFunc},
	{"[TOOL_CALLS]", []byte("[TOOL_CALLS]"), kindMistral},
	{"```", []byte("```"), kindFence},
}

// fenceLangs are the fence languages a fenced call may carry.
var fenceLangs = []string{"", "json", "tool_call", "tool_code"}

type promoteLayer struct {
	r        *relay
	offered  []string
	blocks   map[int]*promoBlock // by inner index
	promoted bool
}

type promoBlock struct {
	held     []byte // text not yet released
	fresh    string // the delta held consists of, when it is only that
	searched int    // held[:searched] is known not to hold the close marker
	kind     int    // the kind of text being held, or kindNone
	out      int    // our open text block, or -1
	ws       string // whitespace waiting for text before a block is opened
	text     strings.Builder
	released bool // non-space text was released from this block
	promoted bool
}

func (l *promoteLayer) run(in iter.Seq2[llm.Event, error]) {
	r := l.r
	for ev, err := range in {
		if err != nil {
			r.bare(ev, err)
			return
		}
		switch ev.Type {
		case llm.EventStart:
			r.start(ev)
		case llm.EventTextStart:
			st := &promoBlock{out: -1}
			l.blocks[ev.ContentIndex] = st
			if t := blockOf(ev).Text; t != "" {
				st.held = append(st.held, t...)
				l.scan(st, false)
			}
		case llm.EventTextDelta:
			if st := l.blocks[ev.ContentIndex]; st != nil {
				if len(st.held) == 0 {
					st.fresh = ev.Delta
				}
				st.held = append(st.held, ev.Delta...)
				l.scan(st, false)
				st.fresh = ""
			}
		case llm.EventTextEnd:
			st := l.blocks[ev.ContentIndex]
			if st == nil {
				break
			}
			delete(l.blocks, ev.ContentIndex)
			if !l.scan(st, true) {
				return
			}
			c := blockOf(ev)
			if ev.Block != nil {
				c = *ev.Block
			}
			switch {
			case st.out >= 0:
				c.Text = st.text.String()
				r.msg.Content[st.out] = c
				r.end(st.out)
			case !st.promoted:
				// Nothing but space (or nothing): keep the block as it was.
				c.Text = st.ws
				j, ok := r.begin(llm.Content{Type: llm.ContentText})
				if ok && st.ws != "" {
					r.msg.Content[j].Text = st.ws
					ok = r.delta(j, st.ws)
				}
				if ok {
					r.msg.Content[j] = c
					r.end(j)
				}
			}
		case llm.EventDone, llm.EventError:
			// A failed reply runs no calls: what is held is text.
			for _, st := range l.blocks {
				if ev.Type == llm.EventError {
					l.release(st, string(st.held))
					st.held = nil
				} else {
					l.scan(st, true)
				}
			}
			reason := llm.StopReason("")
			if ev.Type == llm.EventDone && l.promoted && ev.Reason == llm.StopReasonStop {
				reason = llm.StopReasonToolUse
			}
			r.finish(ev, reason, nil)
			return
		default:
			r.pass(ev, nil)
		}
		if r.stopped {
			return
		}
	}
}

// scan releases what is certainly text, holds what may be a call, and
// promotes the calls it completes. final means the block has ended.
func (l *promoteLayer) scan(st *promoBlock, final bool) bool {
	for !l.r.stopped {
		if st.kind == kindNone {
			if !st.released {
				lead := bytes.TrimLeft(st.held, " \t\r\n")
				if len(lead) == 0 && !final {
					return true // only space so far: wait for the first character
				}
				if len(lead) > 0 && lead[0] == '{' {
					st.kind = kindBare
					continue
				}
			}
			p, kind := -1, kindNone
			for _, m := range markers {
				if i := bytes.Index(st.held, m.bytes); i >= 0 && (p < 0 || i < p) {
					p, kind = i, m.kind
				}
			}
			if p < 0 {
				cut := len(st.held)
				if !final {
					cut = markerHoldback(st.held)
				}
				if cut == len(st.held) && len(st.fresh) == cut {
					l.release(st, st.fresh) // the delta as it came: no copy
				} else {
					l.release(st, string(st.held[:cut]))
				}
				st.drop(cut)
				return !l.r.stopped
			}
			l.release(st, string(st.held[:p]))
			st.drop(p)
			st.kind, st.searched = kind, 0
			continue
		}
		end, notCall := l.segmentEnd(st, final)
		if notCall {
			// Not a call after all: the marker is text; scan on after it.
			n := len(markerOf(st.kind))
			l.release(st, string(st.held[:n]))
			st.drop(n)
			st.kind, st.searched = kindNone, 0
			continue
		}
		if end < 0 {
			if !final {
				return true
			}
			end = len(st.held)
		}
		seg := string(st.held[:end])
		st.drop(end)
		kind := st.kind
		st.kind, st.searched = kindNone, 0
		if calls := l.parse(kind, seg); calls != nil {
			l.emitCalls(st, calls)
		} else {
			l.release(st, seg)
		}
		if final && len(st.held) == 0 {
			return !l.r.stopped
		}
	}
	return false
}

// drop removes the first n bytes of held, keeping its buffer.
func (st *promoBlock) drop(n int) {
	st.held = append(st.held[:0], st.held[n:]...)
	st.fresh = ""
}

func markerOf(kind int) string {
	for _, m := range markers {
		if m.kind == kind {
			return m.open
		}
	}
	return ""
}

// markerHoldback returns where the tail of s that may begin a marker
// starts.
func markerHoldback(s []byte) int {
	for k := min(len(s), 11); k > 0; k-- {
		suffix := s[len(s)-k:]
		for _, m := range markers {
			if len(suffix) < len(m.open) && bytes.HasPrefix(m.bytes, suffix) {
				return len(s) - k
			}
		}
	}
	return len(s)
}

// segmentEnd finds the end of the held call text: -1 when it is not known
// yet; notCall when it is already clear the text is no call.
func (l *promoteLayer) segmentEnd(st *promoBlock, final bool) (end int, notCall bool) {
	h := st.held
	// closeAt finds close after from, remembering how far it looked so
	// that a long held call is searched once, not once per delta.
	closeAt := func(from int, close string) int {
		from = max(from, st.searched)
		if from > len(h) {
			return -1
		}
		if i := bytes.Index(h[from:], []byte(close)); i >= 0 {
			return from + i + len(close)
		}
		st.searched = max(from, len(h)-len(close)+1)
		return -1
	}
	switch st.kind {
	case kindTag:
		return closeAt(len("<tool_call>"), "</tool_call>"), false
	case kindFunc:
		return closeAt(len("<function="), "</function>"), false
	case kindFence:
		nl := bytes.IndexByte(h[3:], '\n')
		if nl < 0 {
			lang := strings.TrimSpace(string(h[3:]))
			for _, fl := range fenceLangs {
				if strings.HasPrefix(fl, lang) {
					return -1, false
				}
			}
			return -1, true
		}
		nl += 3
		lang := strings.TrimSpace(string(h[3:nl]))
		ok := false
		for _, fl := range fenceLangs {
			ok = ok || strings.EqualFold(lang, fl)
		}
		if !ok {
			return -1, true
		}
		body := bytes.TrimLeft(h[nl:], " \t\r\n")
		if len(body) == 0 {
			return -1, final
		}
		if body[0] != '{' {
			return -1, true
		}
		return closeAt(nl, "```"), false
	}
	return -1, false // the rest of the block
}

// textCall is a call found in the text.
type textCall struct {
	name string
	args json.RawMessage
}

// parse reads the calls of a held segment, or returns nil when it is not
// one or more valid calls to offered tools.
func (l *promoteLayer) parse(kind int, seg string) []textCall {
	switch kind {
	case kindTag:
		body := strings.TrimPrefix(seg, "<tool_call>")
		body = strings.TrimSuffix(strings.TrimSpace(body), "</tool_call>")
		if calls := l.parseJSON(body, false); calls != nil {
			return calls
		}
		return l.invalidCall(body)
	case kindMistral:
		body := strings.TrimPrefix(seg, "[TOOL_CALLS]")
		if calls := l.parseJSON(body, false); calls != nil {
			return calls
		}
		return l.invalidCall(body)
	case kindFence:
		body := strings.TrimSpace(seg)
		body = strings.TrimSuffix(body, "```")
		nl := strings.IndexByte(body, '\n')
		if nl < 0 {
			return nil
		}
		return l.parseJSON(body[nl+1:], true)
	case kindBare:
		return l.parseJSON(seg, true)
	case kindFunc:
		body := strings.TrimPrefix(seg, "<function=")
		body = strings.TrimSuffix(strings.TrimSpace(body), "</function>")
		gt := strings.IndexByte(body, '>')
		if gt < 0 {
			return nil
		}
		name, ok := MatchToolName(body[:gt], l.offered)
		if !ok {
			return nil
		}
		args := strings.TrimSpace(body[gt+1:])
		if args == "" {
			args = "{}"
		}
		a, err := jsonpartial.Strict([]byte(args))
		if err != nil {
			a = jsonpartial.Invalid([]byte(args))
		}
		return []textCall{{name: name, args: a}}
	}
	return nil
}

// namedIn finds the tool a call of invalid JSON names.
var namedIn = regexp.MustCompile(`"(?:name|tool|tool_name)"\s*:\s*"([^"\\]+)"`)

// invalidCall makes a call with invalid arguments of a tagged call whose
// JSON does not parse but whose tool can be told: the model meant a call,
// and is better told its arguments were invalid than left unanswered.
func (l *promoteLayer) invalidCall(body string) []textCall {
	body = strings.TrimSpace(body)
	m := namedIn.FindStringSubmatch(body)
	if m == nil {
		return nil
	}
	name, ok := MatchToolName(m[1], l.offered)
	if !ok {
		return nil
	}
	return []textCall{{name: name, args: jsonpartial.Invalid([]byte(body))}}
}

// parseJSON reads one call object, or an array of them (all must be
// calls). needArgs requires an arguments field.
func (l *promoteLayer) parseJSON(body string, needArgs bool) []textCall {
	body = strings.TrimSpace(body)
	if body == "" || !json.Valid([]byte(body)) {
		return nil
	}
	var objs []map[string]json.RawMessage
	if body[0] == '[' {
		if json.Unmarshal([]byte(body), &objs) != nil || len(objs) == 0 {
			return nil
		}
	} else {
		var o map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &o) != nil || o == nil {
			return nil
		}
		objs = append(objs, o)
	}
	calls := make([]textCall, 0, len(objs))
	for _, o := range objs {
		c, ok := l.callOf(o, needArgs)
		if !ok {
			return nil
		}
		calls = append(calls, c)
	}
	return calls
}

func (l *promoteLayer) callOf(o map[string]json.RawMessage, needArgs bool) (textCall, bool) {
	if fn, ok := o["function"]; ok && len(fn) > 0 && fn[0] == '{' {
		// OpenAI's shape: {"type": "function", "function": {"name", "arguments"}}.
		var inner map[string]json.RawMessage
		if json.Unmarshal(fn, &inner) != nil {
			return textCall{}, false
		}
		o = inner
	}
	var name string
	for _, k := range []string{"name", "tool", "tool_name", "function"} {
		if v, ok := o[k]; ok && json.Unmarshal(v, &name) == nil && name != "" {
			break
		}
	}
	matched, ok := MatchToolName(name, l.offered)
	if !ok {
		return textCall{}, false
	}
	var args json.RawMessage
	for _, k := range []string{"arguments", "parameters", "args", "input", "tool_input"} {
		if v, ok := o[k]; ok {
			args = v
			break
		}
	}
	if args == nil {
		if needArgs {
			return textCall{}, false
		}
		args = json.RawMessage("{}")
	}
	if t := bytes.TrimSpace(args); len(t) > 0 && t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) != nil {
			return textCall{}, false
		}
		args = json.RawMessage(s)
	}
	a, err := jsonpartial.Strict(args)
	if err != nil || !json.Valid(a) {
		return textCall{}, false
	}
	return textCall{name: matched, args: a}, true
}

var callSeq atomic.Uint64

func newCallID() string {
	return fmt.Sprintf("call_text_%d_%d", time.Now().UnixMilli(), callSeq.Add(1))
}

// emitCalls closes the open text block and emits each call as a whole
// toolCall block.
func (l *promoteLayer) emitCalls(st *promoBlock, calls []textCall) {
	r := l.r
	if st.out >= 0 {
		if !r.end(st.out) {
			return
		}
		st.out = -1
	}
	st.ws = ""
	st.promoted, l.promoted = true, true
	for _, c := range calls {
		j, ok := r.begin(llm.ToolCall(newCallID(), c.name, nil))
		if !ok {
			return
		}
		r.msg.Content[j].Arguments = c.args
		if !r.delta(j, string(c.args)) || !r.end(j) {
			return
		}
	}
}

// release emits s as text of the block, opening a text block at the first
// character that is not space.
func (l *promoteLayer) release(st *promoBlock, s string) {
	r := l.r
	if s == "" || r.stopped {
		return
	}
	if st.out < 0 {
		if strings.TrimSpace(s) == "" {
			st.ws += s
			return
		}
		s = st.ws + s
		st.ws = ""
		j, ok := r.begin(llm.Content{Type: llm.ContentText})
		if !ok {
			return
		}
		st.out = j
		st.text.Reset()
	}
	st.released = true
	st.text.WriteString(s)
	r.msg.Content[st.out].Text = st.text.String()
	r.delta(st.out, s)
}
