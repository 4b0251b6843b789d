package agent

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// These tests hold the model's stream open with faux's Hold channel. Inside
// a synctest bubble, a wait that cannot be satisfied (a tool that would only
// start after the stream ends, while the test waits for it before releasing
// the stream) deadlocks the bubble and fails the test, so "before" and
// "after" are checked without timing assumptions.

// runAsync runs a in a goroutine and returns a channel closed with its
// events.
func runAsync(t *testing.T, a *Agent, ctx context.Context, prompt string) <-chan []Event {
	out := make(chan []Event, 1)
	go func() {
		var evs []Event
		for ev, err := range a.Run(ctx, llm.UserText(prompt)) {
			if err != nil {
				t.Errorf("run: %v", err)
			}
			evs = append(evs, ev)
		}
		out <- evs
	}()
	return out
}

func TestSafeToolStartsBeforeStreamEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		both := make(chan struct{})
		go func() { wg.Wait(); close(both) }()
		safe := fn("look", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			wg.Done()
			<-both // the two calls overlap
			return tool.TextResult("seen"), nil
		})
		m := faux.New(faux.Reply(tc("a", "look", nil), tc("b", "look", nil), faux.Text("and I keep talking")).WithHold(hold), faux.Say("ok"))
		a := New(Config{Model: m, Tools: registry(t, safe)})
		ends := 0
		a.Subscribe(func(e Event) {
			if e.Type == EventToolExecutionEnd {
				if ends++; ends == 2 {
					close(hold) // the stream ends only after both calls did
				}
			}
		})
		done := runAsync(t, a, context.Background(), "go")
		<-both // both started while the stream is still held open
		evs := <-done
		if last(evs).Reason != ReasonStop {
			t.Fatalf("end %+v", last(evs))
		}
		// Both calls ended before the assistant message did.
		order := typesOf(evs)
		if i, j := slices.Index(order, "tool_execution_end:b"), slices.Index(order, "message_end:assistant"); i < 0 || i > j {
			t.Errorf("events %v", order)
		}
	})
}

func TestExclusiveWaitsForMessageAndRunsAlone(t *testing.T) {
	for _, early := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			hold := make(chan struct{})
			var active atomic.Int32
			var msgDone atomic.Bool
			var problems []string
			var mu sync.Mutex
			note := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
			safe := fn("read", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
				active.Add(1)
				defer active.Add(-1)
				time.Sleep(time.Second)
				return tool.TextResult("r"), nil
			})
			excl := fn("write", false, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
				if n := active.Add(1); n != 1 {
					note("write overlapped another call")
				}
				defer active.Add(-1)
				if !early && !msgDone.Load() {
					note("write started before the message completed")
				}
				if early && msgDone.Load() {
					note("EarlyExclusive write waited for the message")
				}
				time.Sleep(time.Second)
				return tool.TextResult("w"), nil
			})
			m := faux.New(faux.Reply(tc("r1", "read", nil), tc("w", "write", nil), tc("r2", "read", nil)).WithHold(hold), faux.Say("ok"))
			a := New(Config{Model: m, Tools: registry(t, safe, excl), EarlyExclusive: early})
			a.Subscribe(func(e Event) {
				if e.Type == EventMessageEnd && e.Message.Role == llm.RoleAssistant {
					msgDone.Store(true)
				}
				if early && e.Type == EventToolExecutionEnd && e.ToolCallID == "w" {
					close(hold)
				}
			})
			done := runAsync(t, a, context.Background(), "go")
			if !early {
				time.Sleep(10 * time.Second) // r1 finishes; w must still wait
				close(hold)
			}
			evs := <-done
			if len(problems) > 0 {
				t.Errorf("early=%v: %v", early, problems)
			}
			if got := resultIDs(a.Messages()); !slices.Equal(got, []string{"r1", "w", "r2"}) {
				t.Errorf("results %v", got)
			}
			// r2 comes after w in the model's order: it never starts before w ends.
			order := typesOf(evs)
			if slices.Index(order, "tool_execution_start:r2") < slices.Index(order, "tool_execution_end:w") {
				t.Errorf("r2 started before w ended: %v", order)
			}
		})
	}
}

func TestDisableStreamingToolsWaitsForMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var msgDone atomic.Bool
		early := false
		safe := fn("look", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			early = early || !msgDone.Load()
			return tool.TextResult("r"), nil
		})
		m := faux.New(faux.Reply(tc("a", "look", nil), faux.Text("more talk")).WithTail(time.Second), faux.Say("ok"))
		a := New(Config{Model: m, Tools: registry(t, safe), DisableStreamingTools: true})
		a.Subscribe(func(e Event) {
			if e.Type == EventMessageEnd && e.Message.Role == llm.RoleAssistant {
				msgDone.Store(true)
			}
		})
		runAll(t, a, context.Background(), llm.UserText("go"))
		if early {
			t.Error("a call started before the message completed with streaming execution off")
		}
	})
}

func TestCompletionOrderVersusTranscriptOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bDone := make(chan struct{})
		a1 := fn("slow", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			<-bDone
			return tool.TextResult("slow done"), nil
		})
		b1 := fn("fast", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			return tool.TextResult("fast done"), nil
		})
		m := faux.New(faux.Reply(tc("a", "slow", nil), tc("b", "fast", nil)), faux.Say("ok"))
		a := New(Config{Model: m, Tools: registry(t, a1, b1)})
		a.Subscribe(func(e Event) {
			if e.Type == EventToolExecutionEnd && e.ToolCallID == "b" {
				close(bDone) // a finishes only after b was reported
			}
		})
		evs := runAll(t, a, context.Background(), llm.UserText("go"))
		var ends []string
		for _, e := range evs {
			if e.Type == EventToolExecutionEnd {
				ends = append(ends, e.ToolCallID)
			}
		}
		if !slices.Equal(ends, []string{"b", "a"}) {
			t.Errorf("completion order %v, want b then a", ends)
		}
		if got := resultIDs(a.Messages()); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("transcript order %v, want the model's a, b", got)
		}
	})
}

func TestBashFailureCancelsSiblings(t *testing.T) {
	for _, name := range []string{"bash", "other"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				siblingStarted := make(chan struct{})
				release := make(chan struct{})
				sib := fn("sib", true, func(ctx context.Context, _ tool.Call, _ func(tool.Partial)) (tool.Result, error) {
					close(siblingStarted)
					select {
					case <-ctx.Done():
						return tool.Result{}, ctx.Err()
					case <-release:
						return tool.TextResult("sibling finished"), nil
					}
				})
				queuedRan := false
				queued := fn("queued", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
					queuedRan = true
					return tool.TextResult("queued ran"), nil
				})
				failing := fn(name, true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
					<-siblingStarted
					return tool.ErrorResult("exit status 2"), nil
				})
				m := faux.New(faux.Reply(tc("s", "sib", nil), tc("f", name, nil), tc("q", "queued", nil)), faux.Say("ok"))
				a := New(Config{Model: m, Tools: registry(t, sib, queued, failing), MaxConcurrentTools: 2})
				a.Subscribe(func(e Event) {
					if name != "bash" && e.Type == EventToolExecutionEnd && e.ToolCallID == "f" {
						close(release) // a failure that does not cascade: the sibling finishes
					}
				})
				runAll(t, a, context.Background(), llm.UserText("go"))
				res := results(a.Messages())
				checkPairing(t, a.Messages())
				const sibText = "cancelled: a sibling bash command failed"
				if name == "bash" {
					if res["s"].Text() != sibText || res["q"].Text() != sibText || queuedRan {
						t.Errorf("s=%q q=%q queuedRan=%v", res["s"].Text(), res["q"].Text(), queuedRan)
					}
				} else if res["s"].Text() != "sibling finished" || !queuedRan {
					t.Errorf("a non-bash failure cascaded: s=%q q=%q", res["s"].Text(), res["q"].Text())
				}
				if !res["f"].IsError {
					t.Errorf("failing call result %+v", res["f"])
				}
			})
		})
	}
}

func TestCascaderInterface(t *testing.T) {
	tl := &cascading{Func: textTool("deploy", true, "")}
	if !DefaultCascade(tl, tool.Call{Name: "deploy"}) || DefaultCascade(textTool("x", true, ""), tool.Call{Name: "x"}) ||
		!DefaultCascade(textTool("bash", true, ""), tool.Call{Name: "bash"}) {
		t.Error("DefaultCascade disagrees with the Cascader interface or the bash default")
	}
}

type cascading struct{ *tool.Func }

func (*cascading) CascadesOnFailure() bool { return true }

func TestStreamErrorKeepsTurnWithResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		ran := 0
		safe := fn("look", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			ran++
			return tool.TextResult("looked"), nil
		})
		exclRan := false
		excl := fn("write", false, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			exclRan = true
			return tool.TextResult("wrote"), nil
		})
		m := faux.New(
			faux.Reply(tc("a", "look", nil), tc("w", "write", nil), faux.Text("still")).WithHold(hold).
				WithError(faux.Failure{Reason: llm.ReasonOverloaded, Message: "overloaded_error"}),
			faux.Say("recovered"))
		a := New(Config{Model: m, Tools: registry(t, safe, excl)})
		a.Subscribe(func(e Event) {
			if e.Type == EventToolExecutionEnd && e.ToolCallID == "a" {
				close(hold)
			}
		})
		evs := runAll(t, a, context.Background(), llm.UserText("go"))
		if end := last(evs); end.Reason != ReasonError || llm.ReasonOf(end.Err) != llm.ReasonOverloaded {
			t.Fatalf("end %+v", end)
		}
		if ran != 1 || exclRan {
			t.Errorf("safe ran %d times, exclusive ran %v", ran, exclRan)
		}
		msgs := a.Messages()
		checkPairing(t, msgs)
		res := results(msgs)
		if res["a"].Text() != "looked" || !res["w"].IsError || !strings.HasPrefix(res["w"].Text(), "not run") {
			t.Errorf("a=%q w=%q", res["a"].Text(), res["w"].Text())
		}
		// A retry sees the failed turn and what its tool did.
		for _, err := range a.Continue(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
		}
		req := m.Requests()[1].Messages
		if len(req) != 4 || req[1].StopReason != llm.StopReasonError || req[2].Text() != "looked" {
			t.Errorf("retry request: %+v", req)
		}
	})
}

func TestAbortMidStreamWithRunningTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		wg.Add(2)
		waits := fn("wait", true, func(ctx context.Context, _ tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			wg.Done()
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		})
		hold := make(chan struct{})
		defer close(hold)
		m := faux.New(faux.Reply(tc("a", "wait", nil), tc("b", "wait", nil), tc("c", "other", nil), faux.Text("talking")).WithHold(hold))
		a := New(Config{Model: m, Tools: registry(t, waits, textTool("other", false, "x"))})
		done := runAsync(t, a, ctx, "go")
		wg.Wait()
		cancel()
		evs := <-done
		if end := last(evs); end.Reason != ReasonAborted {
			t.Fatalf("end %+v", end)
		}
		msgs := a.Messages()
		checkPairing(t, msgs)
		for _, id := range []string{"a", "b", "c"} {
			if r := results(msgs)[id]; !r.IsError || !strings.HasPrefix(r.Text(), "aborted") {
				t.Errorf("%s: %q", id, r.Text())
			}
		}
		if got := resultIDs(msgs); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("results %v", got)
		}
	})
}

func TestConcurrencyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var active, peak atomic.Int32
		slow := fn("slow", true, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			n := active.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Second)
			active.Add(-1)
			return tool.TextResult("ok"), nil
		})
		var blocks []llm.Content
		for _, id := range []string{"1", "2", "3", "4", "5"} {
			blocks = append(blocks, tc(id, "slow", nil))
		}
		m := faux.New(faux.Reply(blocks...), faux.Say("ok"))
		a := New(Config{Model: m, Tools: registry(t, slow), MaxConcurrentTools: 2})
		runAll(t, a, context.Background(), llm.UserText("go"))
		if peak.Load() != 2 {
			t.Errorf("peak concurrency %d, want 2", peak.Load())
		}
		if got := resultIDs(a.Messages()); !slices.Equal(got, []string{"1", "2", "3", "4", "5"}) {
			t.Errorf("results %v", got)
		}
	})
}

func TestSteerInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a *Agent
		waits := fn("wait", true, func(ctx context.Context, _ tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			a.Steer(llm.UserText("stop, do this instead"))
			<-ctx.Done()
			return tool.Result{}, context.Cause(ctx)
		})
		laterRan := false
		later := fn("later", false, func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			laterRan = true
			return tool.TextResult("x"), nil
		})
		m := faux.New(faux.Reply(tc("a", "wait", nil), tc("b", "later", nil)), faux.Say("switching"))
		a = New(Config{Model: m, Tools: registry(t, waits, later), SteerMode: SteerInterrupt})
		evs := runAll(t, a, context.Background(), llm.UserText("go"))
		if last(evs).Reason != ReasonStop || laterRan {
			t.Fatalf("end %s, later ran %v", last(evs).Reason, laterRan)
		}
		res := results(a.Messages())
		for _, id := range []string{"a", "b"} {
			if !strings.Contains(res[id].Text(), "interrupted") {
				t.Errorf("%s: %q", id, res[id].Text())
			}
		}
		req := m.Requests()[1].Messages
		if req[len(req)-1].Text() != "stop, do this instead" {
			t.Errorf("the steering message was not injected: %+v", req[len(req)-1])
		}
	})
}

func TestStreamFailureBeforeStartIsAnErrorTurn(t *testing.T) {
	m := faux.New(faux.Refuse(llm.ReasonRateLimit, 429, "slow down"))
	a := New(Config{Model: m})
	evs := runAll(t, a, context.Background(), llm.UserText("go"))
	end := last(evs)
	var pe *llm.ProviderError
	if end.Reason != ReasonError || !errors.As(end.Err, &pe) || pe.Status != 429 {
		t.Fatalf("end %+v", end)
	}
	msgs := a.Messages()
	if n := len(msgs); n != 2 || msgs[1].StopReason != llm.StopReasonError || msgs[1].ErrorMessage == "" {
		t.Errorf("messages %+v", msgs)
	}
	if got := typesOf(evs); !slices.Contains(got, "message_start:assistant") || !slices.Contains(got, "message_end:assistant") {
		t.Errorf("events %v", got)
	}
}

func TestBrokenModels(t *testing.T) {
	tests := []struct {
		name  string
		model llm.ModelFunc
		want  string
	}{
		{"panics", func(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
			return func(yield func(llm.Event, error) bool) {
				yield(llm.Event{Type: llm.EventStart}, nil)
				panic("bad provider")
			}
		}, "panicked: bad provider"},
		{"ends without a final event", func(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
			return func(yield func(llm.Event, error) bool) {
				yield(llm.Event{Type: llm.EventTextStart}, nil)
			}
		}, "without a final event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(Config{Model: tt.model})
			evs := runAll(t, a, context.Background(), llm.UserText("go"))
			if end := last(evs); end.Reason != ReasonError || !strings.Contains(end.Err.Error(), tt.want) {
				t.Errorf("end %+v", end)
			}
			msgs := a.Messages()
			if len(msgs) != 2 || msgs[1].StopReason != llm.StopReasonError {
				t.Errorf("messages %+v", msgs)
			}
		})
	}
}
