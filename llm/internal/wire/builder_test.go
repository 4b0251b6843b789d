package wire_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
)

// recorder collects what a Builder yields; it stops listening after stopAt
// events when stopAt > 0.
type recorder struct {
	events []llm.Event
	errs   []error
	stopAt int
}

func (r *recorder) yield(ev llm.Event, err error) bool {
	if err != nil {
		r.errs = append(r.errs, err)
		return false
	}
	r.events = append(r.events, ev)
	return r.stopAt == 0 || len(r.events) < r.stopAt
}

func (r *recorder) types() string {
	s := make([]string, len(r.events))
	for i, ev := range r.events {
		s[i] = string(ev.Type)
	}
	return strings.Join(s, " ")
}

func newBuilder(r *recorder) *wire.Builder {
	info := llm.ModelInfo{ID: "m", Cost: llm.Prices{Input: 2, Output: 10, CacheRead: 0.5}}
	return wire.NewBuilder(info, "p", llm.APIOpenAICompletions, r.yield)
}

func TestBuilderDone(t *testing.T) {
	var r recorder
	b := newBuilder(&r)
	b.Start()
	i, _ := b.Begin(llm.Content{Type: llm.ContentThinking})
	b.Thinking(i, "hm")
	j, _ := b.Begin(llm.Content{Type: llm.ContentText})
	b.Text(j, "Hel")
	b.Text(j, "lo")
	k, _ := b.Begin(llm.Content{Type: llm.ContentToolCall, ID: "c1", Name: "ls"})
	b.ToolArgs(k, `{"path":`)
	if got := string(b.Msg.Content[k].Arguments); got != `{}` {
		t.Errorf("partial arguments %s", got)
	}
	b.ToolArgs(k, ` "."}`)
	b.Msg.Usage.Input, b.Msg.Usage.Output, b.Msg.Usage.CacheRead = 1000, 100, 4000
	b.Done(llm.StopReasonToolUse)

	want := "start thinking_start thinking_delta text_start text_delta text_delta toolcall_start toolcall_delta toolcall_delta thinking_end text_end toolcall_end done"
	if got := r.types(); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if !b.Finished() || b.Open(i) || b.Open(j) || b.Open(k) {
		t.Errorf("finished %v, blocks open %v %v %v", b.Finished(), b.Open(i), b.Open(j), b.Open(k))
	}
	m := r.events[len(r.events)-1].Message
	if m.Text() != "Hello" || m.Content[0].Thinking != "hm" || string(m.Content[2].Arguments) != `{"path": "."}` {
		t.Errorf("message %+v", m.Content)
	}
	if end := r.events[len(r.events)-2]; end.Block == nil || string(end.Block.Arguments) != `{"path": "."}` {
		t.Errorf("toolcall_end block %+v", end.Block)
	}
	// 1000×2 + 100×10 + 4000×0.5 per million.
	if m.Usage.Total != 5100 || math.Abs(m.Usage.Cost.Total-5000.0/1e6) > 1e-15 {
		t.Errorf("usage %+v", *m.Usage)
	}
	for _, ev := range r.events {
		if ev.Partial != &b.Msg {
			t.Fatalf("%s: Partial does not point at the message", ev.Type)
		}
	}
}

// The stop reason follows the content: toolUse exactly when the reply
// called tools; length stays length.
func TestBuilderDoneReason(t *testing.T) {
	tests := []struct {
		said  llm.StopReason
		calls bool
		want  llm.StopReason
	}{
		{llm.StopReasonStop, false, llm.StopReasonStop},
		{llm.StopReasonStop, true, llm.StopReasonToolUse},
		{llm.StopReasonToolUse, true, llm.StopReasonToolUse},
		{llm.StopReasonToolUse, false, llm.StopReasonStop},
		{llm.StopReasonLength, true, llm.StopReasonLength},
		{llm.StopReasonLength, false, llm.StopReasonLength},
	}
	for _, tt := range tests {
		var r recorder
		b := newBuilder(&r)
		b.Start()
		if tt.calls {
			b.Begin(llm.Content{Type: llm.ContentToolCall, ID: "c", Name: "x"})
		}
		b.Done(tt.said)
		last := r.events[len(r.events)-1]
		if last.Reason != tt.want || last.Message.StopReason != tt.want {
			t.Errorf("said %s with calls %v: reason %s, message %s, want %s", tt.said, tt.calls, last.Reason, last.Message.StopReason, tt.want)
		}
	}
}

func TestNewCallID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := wire.NewCallID("call_")
		if len(id) != len("call_")+24 || !strings.HasPrefix(id, "call_") || wire.SanitizeID(id, 40) != id || seen[id] {
			t.Fatalf("id %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
}

func TestBuilderEndStrict(t *testing.T) {
	tests := []struct {
		args  string
		ended bool
		final string
	}{
		{`{"a":1}`, true, `{"a":1}`},
		{`{"a":1`, false, `"{\"a\":1"`},
		{`[1]`, false, `"[1]"`},
		{`{"a" 1}`, false, `"{\"a\" 1}"`},
	}
	for _, tt := range tests {
		var r recorder
		b := newBuilder(&r)
		b.Start()
		i, _ := b.Begin(llm.Content{Type: llm.ContentToolCall, ID: "c", Name: "x"})
		b.ToolArgs(i, tt.args)
		if got := b.EndStrict(i); got != tt.ended || b.Open(i) == tt.ended {
			t.Errorf("%s: EndStrict %v, open %v", tt.args, got, b.Open(i))
		}
		b.Done(llm.StopReasonToolUse)
		if got := string(b.Msg.Content[i].Arguments); got != tt.final {
			t.Errorf("%s: final arguments %s, want %s", tt.args, got, tt.final)
		}
		if n := strings.Count(r.types(), "toolcall_end"); n != 1 {
			t.Errorf("%s: %d toolcall_end events", tt.args, n)
		}
	}
}

func TestBuilderFail(t *testing.T) {
	overloaded := &llm.ProviderError{Reason: llm.ReasonOverloaded, Message: "busy"}
	tests := []struct {
		name   string
		err    error
		reason llm.StopReason
	}{
		{"provider error", overloaded, llm.StopReasonError},
		{"cancelled", context.Canceled, llm.StopReasonAborted},
		{"wrapped cancel", fmt.Errorf("read: %w", context.Canceled), llm.StopReasonAborted},
		{"provider error about a deadline", &llm.ProviderError{Reason: llm.ReasonTimeout, Err: context.DeadlineExceeded}, llm.StopReasonError},
		{"other", errors.New("boom"), llm.StopReasonError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			b := newBuilder(&r)
			b.Start()
			i, _ := b.Begin(llm.Content{Type: llm.ContentToolCall, ID: "c", Name: "x"})
			b.ToolArgs(i, `{"a":[1,`)
			b.Fail(tt.err)
			if got := r.types(); got != "start toolcall_start toolcall_delta error" {
				t.Fatalf("events %s", got)
			}
			last := r.events[len(r.events)-1]
			if last.Reason != tt.reason || last.Message.StopReason != tt.reason || last.Err != tt.err || last.Message.ErrorMessage != tt.err.Error() {
				t.Errorf("error event %+v", last)
			}
			// The cut-off call is closed with arguments that can never run.
			if got := string(last.Message.Content[i].Arguments); got != `"{\"a\":[1,"` || b.Open(i) || b.Finished() {
				t.Errorf("arguments %s, open %v, finished %v", got, b.Open(i), b.Finished())
			}
		})
	}
	t.Run("before start", func(t *testing.T) {
		var r recorder
		b := newBuilder(&r)
		b.Fail(overloaded)
		b.Fail(overloaded)
		if len(r.events) != 0 || len(r.errs) != 1 || r.errs[0] != overloaded {
			t.Fatalf("events %s, errors %v", r.types(), r.errs)
		}
	})
}

// Once the consumer stops, nothing more is yielded and every method says so.
func TestBuilderConsumerStops(t *testing.T) {
	r := recorder{stopAt: 2}
	b := newBuilder(&r)
	b.Start()
	i, ok := b.Begin(llm.Content{Type: llm.ContentText})
	if ok || !b.Stopped() {
		t.Fatalf("Begin ok %v, stopped %v", ok, b.Stopped())
	}
	if b.Text(i, "x") || b.End(i) || b.EndAll() {
		t.Error("a method reported a listening consumer after it stopped")
	}
	b.Done(llm.StopReasonStop)
	b.Fail(errors.New("late"))
	if got := r.types(); got != "start text_start" || len(r.errs) != 0 || b.Finished() {
		t.Fatalf("events %s, errors %v, finished %v", got, r.errs, b.Finished())
	}
}

func TestBuilderReplaceArgs(t *testing.T) {
	var r recorder
	b := newBuilder(&r)
	b.Start()
	i, _ := b.Begin(llm.Content{Type: llm.ContentToolCall, ID: "c", Name: "x"})
	b.ToolArgs(i, `{"a":1,"b"`)
	b.ReplaceArgs(i, `{"a":1,"b":2}`)
	b.End(i)
	if got := string(b.Msg.Content[i].Arguments); got != `{"a":1,"b":2}` {
		t.Fatalf("arguments %s", got)
	}
}

func TestJSONReader(t *testing.T) {
	var j wire.JSONReader
	var v struct{ A int }
	for _, tt := range []struct {
		in string
		ok bool
		a  int
	}{
		{`{"A":1}`, true, 1},
		{"{\"A\":2}\r\n", true, 2},
		{`{"A":3} {"A":4}`, false, 0},
		{`{"A":`, false, 0},
		{`{"A":5}`, true, 5}, // a failed decode leaves no trace
		{`{"A":6}x`, false, 0},
	} {
		v.A = 0
		err := j.Decode([]byte(tt.in), &v)
		if (err == nil) != tt.ok || (tt.ok && v.A != tt.a) {
			t.Errorf("%q: err %v, A %d", tt.in, err, v.A)
		}
	}
}

func TestSanitizeID(t *testing.T) {
	tests := []struct {
		id   string
		max  int
		want string
	}{
		{"call_abc-1", 40, "call_abc-1"},
		{"call_abc|fc_123", 40, "call_abc_fc_123"},
		{"toolu_01.ü", 64, "toolu_01___"},
		{strings.Repeat("a", 50), 40, strings.Repeat("a", 40)},
		{"", 40, "call"},
	}
	for _, tt := range tests {
		if got := wire.SanitizeID(tt.id, tt.max); got != tt.want {
			t.Errorf("SanitizeID(%q, %d) = %q, want %q", tt.id, tt.max, got, tt.want)
		}
	}
}

// A wire package drives a Builder from its decoded stream; the consumer
// sees the events and the message grow.
func ExampleBuilder() {
	yield := func(ev llm.Event, err error) bool {
		fmt.Println(ev.Type, len(ev.Partial.Content))
		return true
	}
	b := wire.NewBuilder(llm.ModelInfo{ID: "m"}, "p", llm.APIAnthropicMessages, yield)
	b.Start()
	i, _ := b.Begin(llm.Content{Type: llm.ContentText})
	b.Text(i, "Hi")
	b.Done(llm.StopReasonStop)
	fmt.Println(b.Msg.Text())
	// Output:
	// start 0
	// text_start 1
	// text_delta 1
	// text_end 1
	// done 1
	// Hi
}
