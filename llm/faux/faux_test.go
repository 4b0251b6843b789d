package faux_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// collect drains a stream into its events, the pre-start error if any,
// and the final message.
func collect(t *testing.T, m llm.Model, ctx context.Context, req *llm.Request) (evs []llm.Event, pre error, final *llm.Message) {
	t.Helper()
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			if len(evs) > 0 {
				t.Fatalf("error %v after %d events; errors after the first event must be error events", err, len(evs))
			}
			return nil, err, nil
		}
		evs = append(evs, ev)
		if ev.Type.Terminal() {
			final = ev.Message
		}
	}
	if final == nil {
		t.Fatalf("stream ended without a terminal event: %v", types(evs))
	}
	return evs, nil, final
}

func types(evs []llm.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type)
	}
	return out
}

func userReq(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.UserText(text)}}
}

func TestStreamChunksBlocks(t *testing.T) {
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 4)
	args := map[string]any{"path": "some/long/path/to/a/file.txt", "limit": 20}
	m := faux.New(faux.Reply(faux.Thinking("Let me think about it."), faux.Text(long), faux.ToolCall("read", args)))
	evs, pre, final := collect(t, m, context.Background(), userReq("hi"))
	if pre != nil {
		t.Fatal(pre)
	}
	var text, thinking, argText strings.Builder
	count := map[llm.EventType]int{}
	for _, e := range evs {
		count[e.Type]++
		switch e.Type {
		case llm.EventTextDelta:
			text.WriteString(e.Delta)
		case llm.EventThinkingDelta:
			thinking.WriteString(e.Delta)
		case llm.EventToolCallDelta:
			argText.WriteString(e.Delta)
			if a := e.Partial.Content[e.ContentIndex].Arguments; !json.Valid(a) || a[0] != '{' {
				t.Errorf("partial arguments after %q are not an object: %s", argText.String(), a)
			}
		}
		if e.Partial == nil {
			t.Fatalf("%s has no partial message", e.Type)
		}
	}
	if evs[0].Type != llm.EventStart || evs[len(evs)-1].Type != llm.EventDone {
		t.Fatalf("events = %v, want start ... done", types(evs))
	}
	if text.String() != long || thinking.String() != "Let me think about it." {
		t.Errorf("deltas do not add up: text %q thinking %q", text.String(), thinking.String())
	}
	if count[llm.EventTextDelta] < 3 || count[llm.EventToolCallDelta] < 3 {
		t.Errorf("want text and arguments in several chunks, got %d text and %d argument deltas", count[llm.EventTextDelta], count[llm.EventToolCallDelta])
	}
	if json.Valid([]byte(evs[indexOf(evs, llm.EventToolCallDelta)].Delta)) {
		t.Errorf("the first argument chunk is valid JSON on its own; want a split mid-JSON")
	}
	want, _ := json.Marshal(args)
	if argText.String() != string(want) {
		t.Errorf("argument deltas = %s, want %s", argText.String(), want)
	}
	if final.StopReason != llm.StopReasonToolUse {
		t.Errorf("stop reason = %s, want toolUse", final.StopReason)
	}
	calls := final.ToolCalls()
	if len(calls) != 1 || calls[0].ID == "" || string(calls[0].Arguments) != string(want) {
		t.Errorf("final tool calls = %+v", calls)
	}
	if final.Provider != "faux" || final.Model != faux.DefaultID || final.API != string(llm.APIFaux) {
		t.Errorf("metadata = %s/%s/%s", final.Provider, final.Model, final.API)
	}
	if final.Usage == nil || final.Usage.Input == 0 || final.Usage.Output == 0 || final.Usage.Total != final.Usage.Input+final.Usage.Output {
		t.Errorf("usage = %+v", final.Usage)
	}
}

func indexOf(evs []llm.Event, typ llm.EventType) int {
	for i, e := range evs {
		if e.Type == typ {
			return i
		}
	}
	return -1
}

func TestCallsAndRequests(t *testing.T) {
	m := faux.New(faux.Say("one"), faux.Say("two"))
	for i, want := range []string{"one", "two"} {
		_, _, final := collect(t, m, context.Background(), userReq("q"+want))
		if final.Text() != want {
			t.Errorf("call %d answered %q, want %q", i+1, final.Text(), want)
		}
	}
	if m.Calls() != 2 || m.Pending() != 0 {
		t.Errorf("calls = %d, pending = %d", m.Calls(), m.Pending())
	}
	reqs := m.Requests()
	if len(reqs) != 2 || reqs[1].Messages[0].Text() != "qtwo" {
		t.Errorf("recorded requests = %+v", reqs)
	}
	// Past the end of the script: a clear error before the first event.
	_, pre, _ := collect(t, m, context.Background(), userReq("more"))
	if pre == nil || !strings.Contains(pre.Error(), "no reply left") {
		t.Errorf("exhausted script error = %v", pre)
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name       string
		step       faux.Step
		wantPre    bool
		wantReason llm.Reason
		wantText   string
	}{
		{"refused before start", faux.Refuse(llm.ReasonRateLimit, 429, "slow down"), true, llm.ReasonRateLimit, ""},
		{"fails after content", faux.Say("half").WithError(faux.Failure{Reason: llm.ReasonOverloaded, Message: "overloaded_error"}), false, llm.ReasonOverloaded, "half"},
		{"fails at once", faux.Fail(llm.ReasonServer, "boom"), false, llm.ReasonServer, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, pre, final := collect(t, faux.New(tt.step), context.Background(), userReq("q"))
			if tt.wantPre {
				if llm.ReasonOf(pre) != tt.wantReason {
					t.Fatalf("pre-start error = %v, want reason %s", pre, tt.wantReason)
				}
				return
			}
			last := evs[len(evs)-1]
			if last.Type != llm.EventError || final.StopReason != llm.StopReasonError || llm.ReasonOf(last.Err) != tt.wantReason {
				t.Fatalf("last event %s, stop %s, err %v", last.Type, final.StopReason, last.Err)
			}
			if final.Text() != tt.wantText || final.ErrorMessage == "" {
				t.Errorf("final text %q, error message %q", final.Text(), final.ErrorMessage)
			}
		})
	}
}

func TestContextWindow(t *testing.T) {
	m := faux.New(faux.Say("fits"), faux.Say("never"))
	m.Info.ContextWindow = 100
	_, pre, _ := collect(t, m, context.Background(), userReq(strings.Repeat("x", 300)))
	if pre != nil {
		t.Fatalf("75 tokens in a 100-token window failed: %v", pre)
	}
	_, pre, _ = collect(t, m, context.Background(), userReq(strings.Repeat("x", 500)))
	var pe *llm.ProviderError
	if !errors.As(pre, &pe) || pe.Reason != llm.ReasonContextOverflow || pe.Status != 400 {
		t.Fatalf("overflow error = %v", pre)
	}
	if want := "prompt is too long: 126 tokens > 100 maximum"; pe.Message != want {
		t.Errorf("message = %q, want %q", pe.Message, want)
	}
}

func TestCancelMidStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := faux.New(faux.Reply(faux.Text(strings.Repeat("word ", 40)), faux.ToolCall("bash", map[string]string{"command": "make test"})).WithDelay(10 * time.Millisecond))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var evs []llm.Event
		for ev, err := range m.Stream(ctx, userReq("q")) {
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
			if ev.Type == llm.EventTextDelta && len(evs) == 4 {
				cancel()
			}
		}
		last := evs[len(evs)-1]
		if last.Type != llm.EventError || last.Message.StopReason != llm.StopReasonAborted || !errors.Is(last.Err, context.Canceled) {
			t.Fatalf("last event = %s %v %v", last.Type, last.Message.StopReason, last.Err)
		}
		if got := last.Message.Text(); got == "" || len(got) >= 200 {
			t.Errorf("kept text %q: want the part streamed before the abort", got)
		}
		if n := len(last.Message.ToolCalls()); n != 0 {
			t.Errorf("a call not yet started is in the aborted message: %d calls", n)
		}
	})
}

func TestCancelInsideToolArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := faux.New(faux.Reply(faux.ToolCall("bash", map[string]string{"command": "make test && make install"})).WithDelay(time.Millisecond))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var last llm.Event
		for ev := range m.Stream(ctx, userReq("q")) {
			last = ev
			if ev.Type == llm.EventToolCallDelta {
				cancel()
			}
		}
		calls := last.Message.ToolCalls()
		if last.Message.StopReason != llm.StopReasonAborted || len(calls) != 1 {
			t.Fatalf("stop %s, calls %v", last.Message.StopReason, calls)
		}
		var s string
		if err := json.Unmarshal(calls[0].Arguments, &s); err != nil || !strings.HasPrefix(s, `{"com`) {
			t.Errorf("cut-off arguments = %s; want the raw text as a JSON string", calls[0].Arguments)
		}
	})
}

func TestBreakStopsProducer(t *testing.T) {
	m := faux.New(faux.Say(strings.Repeat("long answer ", 50)))
	n := 0
	for range m.Stream(context.Background(), userReq("q")) {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("consumed %d events", n)
	}
}

func TestRawToolCall(t *testing.T) {
	_, _, final := collect(t, faux.New(faux.Reply(faux.RawToolCall("read", `{"path": "READ`)).WithStop(llm.StopReasonLength)), context.Background(), userReq("q"))
	c := final.ToolCalls()[0]
	if string(c.Arguments) != `"{\"path\": \"READ"` || final.StopReason != llm.StopReasonLength {
		t.Errorf("arguments %s, stop %s", c.Arguments, final.StopReason)
	}
	if _, err := json.Marshal(final); err != nil {
		t.Errorf("message with cut-off call does not encode: %v", err)
	}
}

func TestFuncStepSeesRequest(t *testing.T) {
	m := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
		return faux.Say("you said " + req.Messages[len(req.Messages)-1].Text())
	}))
	m.Repeat = true
	for _, q := range []string{"a", "b"} {
		_, _, final := collect(t, m, context.Background(), userReq(q))
		if final.Text() != "you said "+q {
			t.Errorf("answer %q", final.Text())
		}
	}
}

func TestHoldKeepsStreamOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		m := faux.New(faux.Say("x").WithHold(hold).WithTail(time.Second))
		got := make(chan llm.EventType, 16)
		go func() {
			for ev := range m.Stream(context.Background(), userReq("q")) {
				got <- ev.Type
			}
			close(got)
		}()
		synctest.Wait()
		var seen []llm.EventType
		for len(got) > 0 {
			seen = append(seen, <-got)
		}
		if seen[len(seen)-1] != llm.EventTextEnd {
			t.Fatalf("before release the stream reached %v", seen)
		}
		close(hold)
		var last llm.EventType
		for e := range got {
			last = e
		}
		if last != llm.EventDone {
			t.Errorf("after release last = %s", last)
		}
	})
}

func TestLoadScript(t *testing.T) {
	m, err := faux.Load("testdata/script.json")
	if err != nil {
		t.Fatal(err)
	}
	info := m.ModelInfo()
	if info.ID != "scripted" || info.ContextWindow != 50000 || info.Provider != "faux" || m.Pending() != 6 {
		t.Fatalf("info %+v pending %d", info, m.Pending())
	}
	ctx := context.Background()
	_, _, f1 := collect(t, m, ctx, userReq("q"))
	if len(f1.Content) != 3 || f1.Content[0].Type != llm.ContentThinking || f1.StopReason != llm.StopReasonToolUse {
		t.Errorf("step 1 = %+v", f1)
	}
	_, _, f2 := collect(t, m, ctx, userReq("q"))
	if f2.Text() != "Blocks as in the transcript." {
		t.Errorf("step 2 = %q", f2.Text())
	}
	_, _, f3 := collect(t, m, ctx, userReq("q"))
	if f3.StopReason != llm.StopReasonLength || f3.ToolCalls()[0].ID != "cut" {
		t.Errorf("step 3 = %+v", f3)
	}
	_, pre, _ := collect(t, m, ctx, userReq("q"))
	var pe *llm.ProviderError
	if !errors.As(pre, &pe) || pe.Reason != llm.ReasonRateLimit || pe.RetryAfter != 1500*time.Millisecond {
		t.Errorf("step 4 = %v", pre)
	}
	_, _, f5 := collect(t, m, ctx, userReq("q"))
	if f5.StopReason != llm.StopReasonError || f5.Text() != "half an answer" {
		t.Errorf("step 5 = %+v", f5)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown field", `{"steps":[{"txt":"x"}]}`, "unknown field"},
		{"bad stop", `{"steps":[{"text":"x","stopReason":"error"}]}`, "stopReason"},
		{"nameless call", `{"steps":[{"toolCalls":[{"arguments":{}}]}]}`, "no name"},
		{"reasonless error", `{"steps":[{"error":{"message":"x"}}]}`, "reason"},
		{"bad block", `{"steps":[{"content":[{"type":"video"}]}]}`, "video"},
		{"not json", `steps:`, "faux script"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := faux.Parse([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	if _, err := faux.Builtin("nope"); err == nil || !strings.Contains(err.Error(), "demo") {
		t.Errorf("unknown builtin error = %v", err)
	}
}

// FuzzParse checks that no script text panics the parser, and that a
// script it accepts plays without a pre-start failure other than its own.
func FuzzParse(f *testing.F) {
	seed, _ := os.ReadFile("testdata/script.json")
	f.Add(seed)
	f.Add([]byte(`{"steps":[{"text":"hi","toolCalls":[{"name":"x","rawArguments":"{\"a"}]}]}`))
	f.Add([]byte(`{"repeat":true,"steps":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := faux.Parse(data)
		if err != nil {
			return
		}
		// Scripts may ask for long delays: a short deadline aborts them.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		for range min(m.Pending(), 3) {
			for ev := range m.Stream(ctx, userReq("q")) {
				if ev.Type.Terminal() && ev.Message == nil {
					t.Fatalf("terminal event without message")
				}
			}
		}
	})
}
