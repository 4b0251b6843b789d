package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

func TestEventOrder(t *testing.T) {
	m := faux.New(faux.Reply(faux.Text("calling"), tc("c1", "echo", nil)), faux.Say("done"))
	a := New(Config{Model: m, Tools: registry(t, textTool("echo", false, "echoed"))})
	evs := runAll(t, a, context.Background(), llm.UserText("go"))
	want := []string{
		"agent_start", "turn_start", "message_start:user", "message_end:user",
		"message_start:assistant", "message_end:assistant",
		"tool_execution_start:c1", "tool_execution_end:c1", "message_start:toolResult", "message_end:toolResult", "turn_end",
		"turn_start", "message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
	}
	if got := typesOf(evs); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	end := last(evs)
	if end.Reason != ReasonStop || end.StopReason != llm.StopReasonStop || end.Usage.Output == 0 || len(end.Messages) != 4 {
		t.Errorf("agent_end = %+v", end)
	}
	msgs := a.Messages()
	if len(msgs) != 4 || msgs[2].Text() != "echoed" || msgs[3].Text() != "done" {
		t.Errorf("messages = %+v", msgs)
	}
	// The second request saw the tool result.
	if req := m.Requests()[1]; len(req.Messages) != 3 || req.Messages[2].Role != llm.RoleToolResult {
		t.Errorf("second request = %+v", req.Messages)
	}
}

func TestSubscribersSeeTheIteratorOrder(t *testing.T) {
	m := faux.New(faux.Reply(tc("a", "s", nil), tc("b", "s", nil), tc("c", "x", nil)), faux.Say("ok"))
	a := New(Config{Model: m, Tools: registry(t, textTool("s", true, "1"), textTool("x", false, "2"))})
	var mu sync.Mutex
	var seen1, seen2 []EventType
	un1 := a.Subscribe(func(e Event) { mu.Lock(); seen1 = append(seen1, e.Type); mu.Unlock() })
	a.Subscribe(func(e Event) { mu.Lock(); seen2 = append(seen2, e.Type); mu.Unlock() })
	var it []EventType
	for ev := range a.Run(context.Background(), llm.UserText("go")) {
		it = append(it, ev.Type)
	}
	if !slices.Equal(seen1, it) || !slices.Equal(seen2, it) {
		t.Fatalf("subscribers saw a different order:\n%v\n%v\n%v", seen1, seen2, it)
	}
	un1()
	m.Append(faux.Say("again"))
	n := len(seen1)
	runAll(t, a, context.Background(), llm.UserText("more"))
	if len(seen1) != n || len(seen2) <= len(it) {
		t.Errorf("unsubscribe: first saw %d new events, second %d", len(seen1)-n, len(seen2)-len(it))
	}
}

func TestContinuationRule(t *testing.T) {
	tests := []struct {
		name      string
		step      faux.Step
		wantCalls int
		wantEnd   string
	}{
		{"tool call continues", faux.Reply(tc("c", "t", nil)), 2, ReasonStop},
		{"gemini stop while calling continues", faux.Reply(tc("c", "t", nil)).WithStop(llm.StopReasonStop), 2, ReasonStop},
		{"length with a call continues", faux.Reply(tc("c", "t", nil)).WithStop(llm.StopReasonLength), 2, ReasonStop},
		{"no call stops", faux.Say("bye"), 1, ReasonStop},
		{"error with a call stops", faux.Reply(tc("c", "t", nil)).WithError(faux.Failure{Reason: llm.ReasonServer}), 1, ReasonError},
		{"refused stops", faux.Refuse(llm.ReasonAuth, 401, "bad key"), 1, ReasonError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := faux.New(tt.step, faux.Say("final"))
			a := New(Config{Model: m, Tools: registry(t, textTool("t", false, "r"))})
			evs := runAll(t, a, context.Background(), llm.UserText("go"))
			if m.Calls() != tt.wantCalls || last(evs).Reason != tt.wantEnd {
				t.Errorf("calls %d end %s, want %d %s", m.Calls(), last(evs).Reason, tt.wantCalls, tt.wantEnd)
			}
			checkPairing(t, a.Messages())
			if tt.wantEnd == ReasonError {
				if end := last(evs); end.Err == nil || end.StopReason != llm.StopReasonError || llm.ReasonOf(end.Err) == "" {
					t.Errorf("error end = %+v", end)
				}
			}
		})
	}
}

func TestToolFailuresBecomeResults(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	var gotArgs string
	typed := fn("typed", true, func(_ context.Context, c tool.Call, _ func(tool.Partial)) (tool.Result, error) {
		gotArgs = string(c.Args)
		return tool.TextResult("ok"), nil
	})
	typed.Parameters = schema
	ran := false
	strict := fn("strict", false, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		ran = true
		return tool.TextResult("ran"), nil
	})
	strict.Parameters = schema
	boom := fn("boom", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) { panic("kaboom") })
	fails := fn("fails", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		return tool.Result{}, errors.New("disk full")
	})
	tests := []struct {
		name    string
		block   llm.Content
		isError bool
		want    string
	}{
		{"coercion", tc("c", "typed", map[string]string{"n": "5"}), false, "ok"},
		{"invalid arguments", tc("c", "strict", map[string]string{"n": "five"}), true, "Invalid arguments"},
		{"incomplete arguments", llm.Content{Type: llm.ContentToolCall, ID: "c", Name: "strict", Arguments: json.RawMessage(`"{\"n\": 4"`)}, true, "incomplete"},
		{"unknown tool", tc("c", "nope", nil), true, `Tool "nope" not found`},
		{"panicking tool", tc("c", "boom", nil), true, "kaboom"},
		{"returned error", tc("c", "fails", nil), true, "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran, gotArgs = false, ""
			m := faux.New(faux.Reply(tt.block), faux.Say("noted"))
			a := New(Config{Model: m, Tools: registry(t, typed, strict, boom, fails)})
			evs := runAll(t, a, context.Background(), llm.UserText("go"))
			if last(evs).Reason != ReasonStop {
				t.Fatalf("end = %+v", last(evs))
			}
			res := results(a.Messages())["c"]
			if res.IsError != tt.isError || !strings.Contains(res.Text(), tt.want) {
				t.Errorf("result isError=%v %q, want %v containing %q", res.IsError, res.Text(), tt.isError, tt.want)
			}
			if tt.isError && ran {
				t.Errorf("a call with bad arguments ran")
			}
			if tt.name == "coercion" && gotArgs != `{"n":5}` {
				t.Errorf("tool got %s, want coerced {\"n\":5}", gotArgs)
			}
		})
	}
}

func TestParallelWhenAllSafe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Each call waits until both have started: only parallel execution
		// gets past it (sequential execution deadlocks the bubble).
		var wg sync.WaitGroup
		wg.Add(2)
		meet := fn("meet", true, func(ctx context.Context, _ tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			wg.Done()
			wg.Wait()
			return tool.TextResult("met"), nil
		})
		for _, streaming := range []bool{true, false} {
			wg = sync.WaitGroup{}
			wg.Add(2)
			m := faux.New(faux.Reply(tc("a", "meet", nil), tc("b", "meet", nil)), faux.Say("ok"))
			a := New(Config{Model: m, Tools: registry(t, meet), DisableStreamingTools: !streaming})
			runAll(t, a, context.Background(), llm.UserText("go"))
			if got := resultIDs(a.Messages()); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("streaming=%v: results %v", streaming, got)
			}
		}
	})
}

func TestSequentialWhenAnyExclusive(t *testing.T) {
	var mu sync.Mutex
	active, maxActive := 0, 0
	var order []string
	track := func(name string, safe bool) *tool.Func {
		return fn(name, safe, func(_ context.Context, c tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			mu.Lock()
			active++
			maxActive = max(maxActive, active)
			order = append(order, c.ID)
			mu.Unlock()
			mu.Lock()
			active--
			mu.Unlock()
			return tool.TextResult(c.ID), nil
		})
	}
	for _, streaming := range []bool{true, false} {
		active, maxActive, order = 0, 0, nil
		m := faux.New(faux.Reply(tc("1", "w", nil), tc("2", "w", nil), tc("3", "w", nil)), faux.Say("ok"))
		a := New(Config{Model: m, Tools: registry(t, track("w", false)), DisableStreamingTools: !streaming})
		runAll(t, a, context.Background(), llm.UserText("go"))
		if maxActive != 1 || !slices.Equal(order, []string{"1", "2", "3"}) {
			t.Errorf("streaming=%v: max active %d, order %v", streaming, maxActive, order)
		}
	}
}

func TestNonStreamingMixedBatchRunsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var order []string
		var mu sync.Mutex
		rec := func(name string, safe bool) *tool.Func {
			return fn(name, safe, func(_ context.Context, c tool.Call, _ func(tool.Partial)) (tool.Result, error) {
				mu.Lock()
				order = append(order, c.ID)
				mu.Unlock()
				return tool.TextResult("x"), nil
			})
		}
		m := faux.New(faux.Reply(tc("r1", "r", nil), tc("w", "w", nil), tc("r2", "r", nil)), faux.Say("ok"))
		a := New(Config{Model: m, Tools: registry(t, rec("r", true), rec("w", false)), DisableStreamingTools: true})
		runAll(t, a, context.Background(), llm.UserText("go"))
		if !slices.Equal(order, []string{"r1", "w", "r2"}) {
			t.Errorf("order %v", order)
		}
	})
}

func TestMaxTurns(t *testing.T) {
	m := faux.New(faux.Reply(tc("c", "t", nil)))
	m.Repeat = true
	a := New(Config{Model: m, Tools: registry(t, textTool("t", true, "again")), MaxTurns: 3})
	evs := runAll(t, a, context.Background(), llm.UserText("loop forever"))
	end := last(evs)
	if end.Reason != ReasonMaxTurns || m.Calls() != 3 || end.StopReason != llm.StopReasonToolUse {
		t.Errorf("end %s/%s after %d calls", end.Reason, end.StopReason, m.Calls())
	}
	checkPairing(t, a.Messages())
	if msgs := a.Messages(); msgs[len(msgs)-1].Role != llm.RoleToolResult {
		t.Errorf("last message %s, want the last call's result", msgs[len(msgs)-1].Role)
	}
}

func TestSteerAfterBatch(t *testing.T) {
	var a *Agent
	var once sync.Once
	slow := fn("slow", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		once.Do(func() { a.Steer(llm.UserText("also check the tests")) })
		return tool.TextResult("done"), nil
	})
	m := faux.New(faux.Reply(tc("a", "slow", nil), tc("b", "slow", nil)), faux.Say("ok"))
	a = New(Config{Model: m, Tools: registry(t, slow), DisableStreamingTools: true})
	runAll(t, a, context.Background(), llm.UserText("go"))
	// Both calls ran; the steering message came after both results.
	req := m.Requests()[1].Messages
	roles := []llm.Role{}
	for _, msg := range req {
		roles = append(roles, msg.Role)
	}
	want := []llm.Role{llm.RoleUser, llm.RoleAssistant, llm.RoleToolResult, llm.RoleToolResult, llm.RoleUser}
	if !slices.Equal(roles, want) || req[4].Text() != "also check the tests" {
		t.Errorf("second request roles %v", roles)
	}
	for _, r := range results(a.Messages()) {
		if r.IsError {
			t.Errorf("steering skipped a call: %q", r.Text())
		}
	}
}

func TestFollowUpWhenIdle(t *testing.T) {
	m := faux.New(faux.Say("first answer"), faux.Say("second answer"))
	a := New(Config{Model: m})
	a.FollowUp(llm.UserText("and then?"))
	evs := runAll(t, a, context.Background(), llm.UserText("hi"))
	if m.Calls() != 2 || last(evs).Reason != ReasonStop {
		t.Fatalf("calls %d", m.Calls())
	}
	msgs := a.Messages()
	if len(msgs) != 4 || msgs[2].Text() != "and then?" || msgs[3].Text() != "second answer" {
		t.Errorf("messages %+v", msgs)
	}
}

func TestAbortDuringModelStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := faux.New(faux.Reply(tc("a", "t", nil), faux.Text(strings.Repeat("still talking ", 30)), tc("b", "t", nil)).WithDelay(1))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := New(Config{Model: m, Tools: registry(t, textTool("t", false, "r"))})
		deltas := 0
		a.Subscribe(func(e Event) {
			if e.Type == EventMessageUpdate && e.LLM.Type == llm.EventTextDelta {
				if deltas++; deltas == 3 {
					cancel()
				}
			}
		})
		evs := runAll(t, a, ctx, llm.UserText("go"))
		end := last(evs)
		if end.Reason != ReasonAborted || end.StopReason != llm.StopReasonAborted || !errors.Is(end.Err, context.Canceled) {
			t.Fatalf("end %+v", end)
		}
		msgs := a.Messages()
		checkPairing(t, msgs)
		asst := msgs[1]
		if asst.StopReason != llm.StopReasonAborted || !strings.Contains(asst.Text(), "still talking") {
			t.Errorf("assistant %s %q: want the streamed text kept", asst.StopReason, asst.Text())
		}
		if r := results(msgs)["a"]; !r.IsError || r.Text() != tool.AbortedText {
			t.Errorf("result of a = %q", r.Text())
		}
	})
}

func TestAbortDuringTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		waits := fn("wait", false, func(ctx context.Context, _ tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			cancel()
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		})
		m := faux.New(faux.Reply(tc("a", "wait", nil), tc("b", "wait", nil)), faux.Say("never"))
		a := New(Config{Model: m, Tools: registry(t, waits)})
		evs := runAll(t, a, ctx, llm.UserText("go"))
		if end := last(evs); end.Reason != ReasonAborted || m.Calls() != 1 {
			t.Fatalf("end %s after %d calls", end.Reason, m.Calls())
		}
		msgs := a.Messages()
		checkPairing(t, msgs)
		for id, r := range results(msgs) {
			if !r.IsError || !strings.HasPrefix(r.Text(), "aborted") {
				t.Errorf("result %s = %q", id, r.Text())
			}
		}
	})
}

func TestBreakAbortsAndWindsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		waits := fn("wait", true, func(ctx context.Context, _ tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		})
		m := faux.New(faux.Reply(tc("a", "wait", nil)), faux.Say("never"))
		a := New(Config{Model: m, Tools: registry(t, waits)})
		var subEnd Event
		a.Subscribe(func(e Event) {
			if e.Type == EventAgentEnd {
				subEnd = e
			}
		})
		for ev := range a.Run(context.Background(), llm.UserText("go")) {
			if ev.Type == EventToolExecutionStart {
				break
			}
		}
		if subEnd.Reason != ReasonAborted {
			t.Errorf("subscriber saw end %q", subEnd.Reason)
		}
		checkPairing(t, a.Messages())
	})
}

func TestRunErrors(t *testing.T) {
	if _, err := first(New(Config{}).Run(context.Background(), llm.UserText("x"))); !errors.Is(err, ErrNoModel) {
		t.Errorf("no model: %v", err)
	}
	a := New(Config{Model: faux.New(faux.Say("hi"))})
	if _, err := first(a.Continue(context.Background())); !errors.Is(err, ErrNoMessages) {
		t.Errorf("empty continue: %v", err)
	}
	runAll(t, a, context.Background(), llm.UserText("x"))
	if _, err := first(a.Continue(context.Background())); !errors.Is(err, ErrAssistant) {
		t.Errorf("continue after assistant: %v", err)
	}
	// Running twice at once.
	hold := make(chan struct{})
	b := New(Config{Model: faux.New(faux.Say("slow").WithHold(hold))})
	next, stop := iterPull(b.Run(context.Background(), llm.UserText("x")))
	defer stop()
	next()
	if _, err := first(b.Run(context.Background(), llm.UserText("y"))); !errors.Is(err, ErrRunning) {
		t.Errorf("second run: %v", err)
	}
	if err := b.SetMessages(nil); !errors.Is(err, ErrRunning) {
		t.Errorf("SetMessages while running: %v", err)
	}
	close(hold)
}

func TestContinueFromToolResult(t *testing.T) {
	m := faux.New(faux.Say("picked up"))
	hist := []llm.Message{llm.UserText("go"), {Role: llm.RoleAssistant, Content: []llm.Content{tc("c", "t", nil)}, StopReason: llm.StopReasonToolUse},
		tool.TextResult("r").Message("c", "t")}
	a := New(Config{Model: m, Messages: hist})
	var evs []Event
	for ev, err := range a.Continue(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if last(evs).Reason != ReasonStop || len(m.Requests()[0].Messages) != 3 || len(a.Messages()) != 4 {
		t.Errorf("continue: %v, request had %d messages", typesOf(evs), len(m.Requests()[0].Messages))
	}
}

func TestTransformContext(t *testing.T) {
	m := faux.New(faux.Say("ok"), faux.Say("unused"))
	a := New(Config{Model: m, TransformContext: func(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
		return append([]llm.Message{llm.UserText("injected summary")}, msgs...), nil
	}})
	runAll(t, a, context.Background(), llm.UserText("hi"))
	if req := m.Requests()[0]; len(req.Messages) != 2 || req.Messages[0].Text() != "injected summary" {
		t.Errorf("request = %+v", req.Messages)
	}
	if len(a.Messages()) != 2 {
		t.Errorf("the transform leaked into the history: %d messages", len(a.Messages()))
	}
	b := New(Config{Model: m, TransformContext: func(context.Context, []llm.Message) ([]llm.Message, error) {
		return nil, errors.New("summariser down")
	}})
	evs := runAll(t, b, context.Background(), llm.UserText("hi"))
	if end := last(evs); end.Reason != ReasonError || !strings.Contains(end.Err.Error(), "summariser down") {
		t.Errorf("end %+v", end)
	}
}

func first(seq func(func(Event, error) bool)) (Event, error) {
	for ev, err := range seq {
		return ev, err
	}
	return Event{}, nil
}

func TestSteerDuringFinalAnswerIsNotLost(t *testing.T) {
	m := faux.New(faux.Say("answer"), faux.Say("answer to the steer"))
	a := New(Config{Model: m})
	a.Subscribe(func(e Event) {
		if e.Type == EventTurnEnd && e.Turn == 1 {
			a.Steer(llm.UserText("one more thing"))
		}
	})
	runAll(t, a, context.Background(), llm.UserText("hi"))
	if m.Calls() != 2 {
		t.Fatalf("calls %d: the steering message was left in the queue", m.Calls())
	}
}
