package wrap

import (
	"context"
	"encoding/json"
	"iter"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
)

// RepairToolCalls returns the layer that repairs malformed tool calls
// (layer 2). At the end of each call whose arguments the wire marked
// invalid (jsonpartial.Invalid), RepairArguments is tried; a repair that
// is not unambiguous leaves the call marked invalid, to be answered with an
// error and never run. A call whose name is empty is dropped: its events
// are held until a name arrives, and never emitted if none does. When
// dropping leaves a toolUse reply without calls, it ends as stop.
func RepairToolCalls() Middleware {
	return func(inner llm.Model) llm.Model {
		return layer(inner, func(ctx context.Context, req *llm.Request, in iter.Seq2[llm.Event, error], r *relay) {
			(&repairLayer{r: r, held: map[int]*heldCall{}}).run(in)
		})
	}
}

type repairLayer struct {
	r       *relay
	held    map[int]*heldCall // calls without a name yet, by inner index
	dropped bool
}

type heldCall struct{ deltas []string }

func repairBlock(c llm.Content) llm.Content {
	if c.Type != llm.ContentToolCall || !jsonpartial.IsInvalid(c.Arguments) {
		return c
	}
	var raw string
	if json.Unmarshal(c.Arguments, &raw) != nil {
		return c
	}
	if fixed, ok := RepairArguments(raw); ok {
		c.Arguments = fixed
	}
	return c
}

func named(c llm.Content) bool { return strings.TrimSpace(c.Name) != "" }

func (l *repairLayer) run(in iter.Seq2[llm.Event, error]) {
	r := l.r
	for ev, err := range in {
		if err != nil {
			r.bare(ev, err)
			return
		}
		switch ev.Type {
		case llm.EventStart:
			r.start(ev)
		case llm.EventToolCallStart:
			if named(blockOf(ev)) {
				r.pass(ev, nil)
			} else {
				l.held[ev.ContentIndex] = &heldCall{}
			}
		case llm.EventToolCallDelta:
			h := l.held[ev.ContentIndex]
			if h == nil {
				r.pass(ev, nil)
				break
			}
			h.deltas = append(h.deltas, ev.Delta)
			if named(blockOf(ev)) {
				l.release(ev)
			}
		case llm.EventToolCallEnd:
			if h := l.held[ev.ContentIndex]; h != nil {
				c := blockOf(ev)
				if ev.Block != nil {
					c = *ev.Block
				}
				if !named(c) {
					delete(l.held, ev.ContentIndex)
					l.dropped = true
					break
				}
				l.release(ev)
			}
			r.pass(ev, repairBlock)
		case llm.EventDone, llm.EventError:
			reason := llm.StopReason("")
			if ev.Type == llm.EventDone && l.dropped && ev.Reason == llm.StopReasonToolUse && !hasCalls(r.msg.Content) {
				reason = llm.StopReasonStop
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

// release emits a held call's start and the deltas it had so far, now
// that it has a name.
func (l *repairLayer) release(ev llm.Event) {
	h := l.held[ev.ContentIndex]
	delete(l.held, ev.ContentIndex)
	c := blockOf(ev)
	j, ok := l.r.begin(c)
	l.r.idx[ev.ContentIndex] = j
	for _, d := range h.deltas {
		if !ok {
			return
		}
		ok = l.r.delta(j, d)
	}
}

func hasCalls(cs []llm.Content) bool {
	for _, c := range cs {
		if c.Type == llm.ContentToolCall {
			return true
		}
	}
	return false
}

// RepairArguments repairs the text of tool-call arguments that is not a
// JSON object, when the repair is unambiguous: surrounding whitespace or a
// code fence, an object encoded as a JSON string, trailing commas,
// single-quoted strings, unquoted keys, and Python's True, False and None.
// It reports false when the text still is not exactly one JSON object
// after these fixes; the caller then keeps the call marked invalid.
func RepairArguments(raw string) (json.RawMessage, bool) {
	s := stripFence(strings.TrimSpace(raw))
	if s == "" {
		return nil, false
	}
	if out, err := jsonpartial.Strict([]byte(s)); err == nil {
		return out, true
	}
	if s[0] == '"' {
		var inner string
		if json.Unmarshal([]byte(s), &inner) != nil {
			return nil, false
		}
		s = stripFence(strings.TrimSpace(inner))
		if s == "" || s[0] == '"' {
			return nil, false
		}
		if out, err := jsonpartial.Strict([]byte(s)); err == nil {
			return out, true
		}
	}
	if s[0] != '{' {
		return nil, false
	}
	fixed, ok := relaxedJSON(s)
	if !ok {
		return nil, false
	}
	if out, err := jsonpartial.Strict(fixed); err == nil {
		return out, true
	}
	return nil, false
}

// stripFence removes a Markdown code fence around s.
func stripFence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return strings.TrimSpace(body)
	}
	if lang := strings.TrimSpace(body[:nl]); lang != "" && lang != "json" && lang != "JSON" {
		return s
	}
	return strings.TrimSpace(body[nl+1:])
}

// relaxedJSON rewrites the JSON-like text of a lax serialiser into JSON:
// single-quoted strings become double-quoted, trailing commas go,
// unquoted keys get quotes, Python literals become JSON's. Double-quoted
// strings are copied as they are.
func relaxedJSON(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, false
			}
			out = append(out, s[i:j+1]...)
			i = j + 1
		case c == '\'':
			out = append(out, '"')
			j := i + 1
			for ; j < len(s) && s[j] != '\''; j++ {
				switch {
				case s[j] == '\\' && j+1 < len(s) && s[j+1] == '\'':
					out = append(out, '\'')
					j++
				case s[j] == '\\' && j+1 < len(s):
					out = append(out, s[j], s[j+1])
					j++
				case s[j] == '"':
					out = append(out, '\\', '"')
				default:
					out = append(out, s[j])
				}
			}
			if j >= len(s) {
				return nil, false
			}
			out = append(out, '"')
			i = j + 1
		case c == ',':
			j := i + 1
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				i = j // a trailing comma
				continue
			}
			out = append(out, c)
			i++
		case isWordStart(c):
			j := i
			for j < len(s) && isWord(s[j]) {
				j++
			}
			word := s[i:j]
			k := j
			for k < len(s) && isSpace(s[k]) {
				k++
			}
			switch {
			case k < len(s) && s[k] == ':':
				out = append(out, '"')
				out = append(out, word...)
				out = append(out, '"')
			case word == "True":
				out = append(out, "true"...)
			case word == "False":
				out = append(out, "false"...)
			case word == "None":
				out = append(out, "null"...)
			default:
				out = append(out, word...)
			}
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	return out, true
}

func isSpace(c byte) bool     { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isWordStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isWord(c byte) bool      { return isWordStart(c) || c >= '0' && c <= '9' }
