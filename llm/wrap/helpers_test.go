package wrap_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// blk is one block of a scripted reply: its kind, its deltas, and for
// calls the id and name (lateName: the name arrives with the first delta).
type blk struct {
	typ      llm.ContentType
	chunks   []string
	id, name string
	lateName bool
}

func text(chunks ...string) blk     { return blk{typ: llm.ContentText, chunks: chunks} }
func thinking(chunks ...string) blk { return blk{typ: llm.ContentThinking, chunks: chunks} }
func call(id, name string, chunks ...string) blk {
	return blk{typ: llm.ContentToolCall, id: id, name: name, chunks: chunks}
}

// scripted streams blocks the way the wire packages do: Partial is the
// message so far, tool arguments are parsed tolerantly per delta and
// strictly (or marked Invalid) at the end.
type scripted struct {
	blocks []blk
	reason llm.StopReason
	fail   error // ends the stream with an error event after the blocks
	bare   error // fails before the first event
}

func (s scripted) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if s.bare != nil {
			yield(llm.Event{}, s.bare)
			return
		}
		msg := &llm.Message{Role: llm.RoleAssistant, Provider: "test", Model: "m", Usage: &llm.Usage{Input: 3}, Content: []llm.Content{}}
		emit := func(e llm.Event) bool { e.Partial = msg; return yield(e, nil) }
		if !emit(llm.Event{Type: llm.EventStart}) {
			return
		}
		for _, b := range s.blocks {
			i := len(msg.Content)
			c := llm.Content{Type: b.typ}
			st, dt, et := llm.EventTextStart, llm.EventTextDelta, llm.EventTextEnd
			switch b.typ {
			case llm.ContentThinking:
				st, dt, et = llm.EventThinkingStart, llm.EventThinkingDelta, llm.EventThinkingEnd
			case llm.ContentToolCall:
				st, dt, et = llm.EventToolCallStart, llm.EventToolCallDelta, llm.EventToolCallEnd
				c.ID, c.Arguments = b.id, json.RawMessage("{}")
				if !b.lateName {
					c.Name = b.name
				}
			}
			msg.Content = append(msg.Content, c)
			if !emit(llm.Event{Type: st, ContentIndex: i}) {
				return
			}
			var sb strings.Builder
			for _, d := range b.chunks {
				sb.WriteString(d)
				p := &msg.Content[i]
				switch b.typ {
				case llm.ContentText:
					p.Text = sb.String()
				case llm.ContentThinking:
					p.Thinking = sb.String()
				case llm.ContentToolCall:
					p.Name = b.name
					p.Arguments = jsonpartial.Parse([]byte(sb.String()))
				}
				if !emit(llm.Event{Type: dt, ContentIndex: i, Delta: d}) {
					return
				}
			}
			if s.fail != nil && b.typ == llm.ContentToolCall {
				break // a failed stream leaves its last call open
			}
			if b.typ == llm.ContentToolCall {
				msg.Content[i].Name = b.name
				raw := []byte(sb.String())
				if a, err := jsonpartial.Strict(raw); err == nil {
					msg.Content[i].Arguments = a
				} else {
					msg.Content[i].Arguments = jsonpartial.Invalid(raw)
				}
			}
			blk := msg.Content[i]
			if !emit(llm.Event{Type: et, ContentIndex: i, Block: &blk}) {
				return
			}
		}
		if s.fail != nil {
			msg.StopReason, msg.ErrorMessage = llm.StopReasonError, s.fail.Error()
			emit(llm.Event{Type: llm.EventError, Reason: llm.StopReasonError, Message: msg, Err: s.fail})
			return
		}
		reason := s.reason
		if reason == "" {
			reason = llm.StopReasonStop
			for _, b := range s.blocks {
				if b.typ == llm.ContentToolCall {
					reason = llm.StopReasonToolUse
				}
			}
		}
		msg.StopReason = reason
		emit(llm.Event{Type: llm.EventDone, Reason: reason, Message: msg})
	}
}

// outcome is what a checked stream produced.
type outcome struct {
	types []string
	msg   *llm.Message
	err   error
}

// run streams m and checks that the events are consistent: one start
// first and one terminal event last; blocks started in index order, each
// event's type matching its block's kind, no event after a block's end;
// text and thinking equal to their deltas at every step; _end blocks equal
// to Partial; the final message holding exactly the announced blocks.
func run(t *testing.T, m llm.Model, req *llm.Request) outcome {
	t.Helper()
	if req == nil {
		req = toolsRequest()
	}
	var o outcome
	var acc []strings.Builder
	var ended []bool
	var endBlocks []llm.Content
	for ev, err := range m.Stream(context.Background(), req) {
		if err != nil {
			if len(o.types) != 0 {
				t.Fatalf("bare error after events: %v", err)
			}
			o.err = err
			continue
		}
		o.types = append(o.types, string(ev.Type))
		if len(o.types) == 1 && ev.Type != llm.EventStart {
			t.Fatalf("first event %s", ev.Type)
		}
		if o.msg != nil {
			t.Fatalf("event %s after the terminal event", ev.Type)
		}
		if ev.Type.Terminal() {
			if ev.Message == nil {
				t.Fatalf("terminal event without a message")
			}
			o.msg, o.err = ev.Message, ev.Err
			if len(o.msg.Content) != len(acc) {
				t.Fatalf("final message has %d blocks, %d were announced", len(o.msg.Content), len(acc))
			}
			for i := range acc {
				if ended[i] && !equalBlock(o.msg.Content[i], endBlocks[i]) {
					t.Errorf("final block %d %+v differs from its _end block %+v", i, o.msg.Content[i], endBlocks[i])
				}
			}
			if ev.Reason != o.msg.StopReason {
				t.Errorf("event reason %q, message %q", ev.Reason, o.msg.StopReason)
			}
			continue
		}
		if ev.Type == llm.EventStart {
			continue
		}
		p, i := ev.Partial, ev.ContentIndex
		if p == nil || i < 0 || i >= len(p.Content) {
			t.Fatalf("%s at index %d outside partial", ev.Type, i)
		}
		c := p.Content[i]
		kind := strings.SplitN(string(ev.Type), "_", 2)
		want := map[llm.ContentType]string{llm.ContentText: "text", llm.ContentThinking: "thinking", llm.ContentToolCall: "toolcall"}[c.Type]
		if kind[0] != want {
			t.Fatalf("%s event on a %s block", ev.Type, c.Type)
		}
		switch kind[1] {
		case "start":
			if i != len(acc) || len(p.Content) != i+1 {
				t.Fatalf("start of block %d with %d announced and %d in partial", i, len(acc), len(p.Content))
			}
			acc = append(acc, strings.Builder{})
			ended = append(ended, false)
			endBlocks = append(endBlocks, llm.Content{})
		case "delta", "end":
			if i >= len(acc) || ended[i] {
				t.Fatalf("%s for block %d not open", ev.Type, i)
			}
			if kind[1] == "delta" {
				acc[i].WriteString(ev.Delta)
			}
			// Lengths at every step, the text itself at the end: a full
			// comparison per delta would make long streams quadratic.
			full := kind[1] == "end"
			switch c.Type {
			case llm.ContentText:
				if len(c.Text) != acc[i].Len() || full && c.Text != acc[i].String() {
					t.Fatalf("block %d text %q, deltas %q", i, c.Text, acc[i].String())
				}
			case llm.ContentThinking:
				if len(c.Thinking) != acc[i].Len() || full && c.Thinking != acc[i].String() {
					t.Fatalf("block %d thinking %q, deltas %q", i, c.Thinking, acc[i].String())
				}
			case llm.ContentToolCall:
				if !json.Valid(c.Arguments) {
					t.Fatalf("block %d arguments %q", i, c.Arguments)
				}
			}
			if kind[1] == "end" {
				if ev.Block == nil || !equalBlock(*ev.Block, c) {
					t.Fatalf("end block %+v, partial %+v", ev.Block, c)
				}
				ended[i] = true
				endBlocks[i] = *ev.Block
			}
		}
	}
	if o.msg == nil && o.err == nil {
		t.Fatalf("stream ended without a terminal event")
	}
	return o
}

func equalBlock(a, b llm.Content) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func toolsRequest() *llm.Request {
	return &llm.Request{
		Messages: []llm.Message{llm.UserText("go")},
		Tools: []llm.ToolSpec{
			{Name: "read", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			{Name: "bash", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
		},
	}
}

// shape describes a message compactly: "text:Hi" "call:read{...}" ...
func shape(m *llm.Message) string {
	var parts []string
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			parts = append(parts, "text:"+c.Text)
		case llm.ContentThinking:
			parts = append(parts, "thinking:"+c.Thinking)
		case llm.ContentToolCall:
			parts = append(parts, "call:"+c.Name+string(c.Arguments))
		}
	}
	return strings.Join(parts, " | ") + " ." + string(m.StopReason)
}

var errBoom = errors.New("boom")
