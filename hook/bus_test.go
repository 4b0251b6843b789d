package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder collects notices.
type recorder struct {
	mu      sync.Mutex
	notices []Notice
}

func (r *recorder) report(_ context.Context, n Notice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notices = append(r.notices, n)
}

func (r *recorder) all() []Notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Notice(nil), r.notices...)
}

func (r *recorder) kinds() []NoticeKind {
	var ks []NoticeKind
	for _, n := range r.all() {
		ks = append(ks, n.Kind)
	}
	return ks
}

func newBus(t *testing.T) (*Bus, *recorder) {
	t.Helper()
	rec := &recorder{}
	return New(&Options{Report: rec.report}), rec
}

var ctx = context.Background()

func TestPriorityOrder(t *testing.T) {
	b, _ := newBus(t)
	var order []string
	reg := func(name string, prio int) {
		b.OnBeforeModelResolve(Spec{Name: name, Priority: prio}, func(context.Context, BeforeModelResolveInput) (BeforeModelResolveOutput, error) {
			order = append(order, name)
			return BeforeModelResolveOutput{}, nil
		})
	}
	reg("low", -5)
	reg("mid-a", 0)
	reg("high", 10)
	reg("mid-b", 0)
	b.BeforeModelResolve(ctx, BeforeModelResolveInput{})
	want := []string{"high", "mid-a", "mid-b", "low"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	var names []string
	for _, s := range b.Registered(BeforeModelResolve) {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Registered (-want +got):\n%s", diff)
	}
}

func TestRemove(t *testing.T) {
	b, _ := newBus(t)
	calls := 0
	remove := b.OnStop(Spec{}, func(context.Context, StopInput) (StopOutput, error) {
		calls++
		return StopOutput{Continue: true}, nil
	})
	if !b.Stop(ctx, StopInput{}).Continue {
		t.Fatal("registered hook did not run")
	}
	remove()
	if b.Stop(ctx, StopInput{}).Continue || calls != 1 || b.Len(Stop) != 0 {
		t.Fatalf("removed hook still runs: calls=%d len=%d", calls, b.Len(Stop))
	}
}

func TestModelResolveFirstDefinedWins(t *testing.T) {
	tests := []struct {
		name string
		outs []BeforeModelResolveOutput // in priority order
		want BeforeModelResolveOutput
	}{
		{"none", nil, BeforeModelResolveOutput{}},
		{"one", []BeforeModelResolveOutput{{Model: "m1"}}, BeforeModelResolveOutput{Model: "m1"}},
		{"first wins", []BeforeModelResolveOutput{{Model: "m1"}, {Model: "m2", Provider: "p2"}}, BeforeModelResolveOutput{Provider: "p2", Model: "m1"}},
		{"empty does not count", []BeforeModelResolveOutput{{}, {Provider: "p2"}, {Provider: "p3", Model: "m3"}}, BeforeModelResolveOutput{Provider: "p2", Model: "m3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBus(t)
			for i, o := range tt.outs {
				b.OnBeforeModelResolve(Spec{Priority: -i}, func(context.Context, BeforeModelResolveInput) (BeforeModelResolveOutput, error) { return o, nil })
			}
			if got := b.BeforeModelResolve(ctx, BeforeModelResolveInput{}); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPromptBuildMerge(t *testing.T) {
	b, _ := newBus(t)
	b.OnBeforePromptBuild(Spec{Priority: 2}, func(context.Context, BeforePromptBuildInput) (PromptEdit, error) {
		return PromptEdit{PrependContext: "ctx-hi", AppendSystemContext: "app-hi"}, nil
	})
	b.OnBeforePromptBuild(Spec{Priority: 1}, func(context.Context, BeforePromptBuildInput) (PromptEdit, error) {
		return PromptEdit{SystemPrompt: "sys-1", PrependContext: "ctx-mid", PrependSystemContext: "pre-mid"}, nil
	})
	b.OnBeforePromptBuild(Spec{Priority: 0}, func(context.Context, BeforePromptBuildInput) (PromptEdit, error) {
		return PromptEdit{SystemPrompt: "sys-0", AppendSystemContext: "app-lo"}, nil
	})
	got := b.BeforePromptBuild(ctx, BeforePromptBuildInput{Prompt: "hi"})
	want := PromptEdit{
		SystemPrompt:         "sys-1",
		PrependContext:       "ctx-hi\n\nctx-mid",
		PrependSystemContext: "pre-mid",
		AppendSystemContext:  "app-hi\n\napp-lo",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("merge (-want +got):\n%s", diff)
	}
	sys, prompt := got.Apply("base", "do it")
	if sys != "pre-mid\n\nsys-1\n\napp-hi\n\napp-lo" || prompt != "ctx-hi\n\nctx-mid\n\ndo it" {
		t.Errorf("Apply = %q, %q", sys, prompt)
	}

	// The legacy point's answer lies under the newer ones.
	b.OnBeforeAgentStart(Spec{}, func(context.Context, BeforeAgentStartInput) (BeforeAgentStartOutput, error) {
		return BeforeAgentStartOutput{Model: "legacy-model", Provider: "legacy", PromptEdit: PromptEdit{SystemPrompt: "legacy-sys", PrependContext: "legacy-ctx"}}, nil
	})
	legacy := b.BeforeAgentStart(ctx, BeforeAgentStartInput{})
	if e := got.Under(legacy.PromptEdit); e.SystemPrompt != "sys-1" || e.PrependContext != "ctx-hi\n\nctx-mid" {
		t.Errorf("newer point lost to legacy: %+v", e)
	}
	if e := (PromptEdit{}).Under(legacy.PromptEdit); e.SystemPrompt != "legacy-sys" {
		t.Errorf("legacy not used when newer is empty: %+v", e)
	}
	if m := (BeforeModelResolveOutput{Model: "new"}).Under(legacy); m.Model != "new" || m.Provider != "legacy" {
		t.Errorf("model Under = %+v", m)
	}
}

func callOf(args string) tool.Call {
	return tool.Call{ID: "c1", Name: "bash", Args: json.RawMessage(args)}
}

func TestBeforeToolCallMerge(t *testing.T) {
	type hookFn = func(context.Context, BeforeToolCallInput) (BeforeToolCallOutput, error)
	answer := func(o BeforeToolCallOutput) hookFn {
		return func(context.Context, BeforeToolCallInput) (BeforeToolCallOutput, error) { return o, nil }
	}
	failing := func(context.Context, BeforeToolCallInput) (BeforeToolCallOutput, error) {
		return BeforeToolCallOutput{}, errors.New("guard crashed")
	}
	tests := []struct {
		name     string
		hooks    []hookFn
		failOpen bool
		want     BeforeToolCallOutput
		ran      int // hooks that ran
		notices  []NoticeKind
	}{
		{"nothing", []hookFn{answer(BeforeToolCallOutput{})}, false, BeforeToolCallOutput{}, 1, nil},
		{"block stops the rest", []hookFn{
			answer(BeforeToolCallOutput{Block: true, Reason: "no rm"}),
			answer(BeforeToolCallOutput{Permission: PermissionAllow}),
		}, false, BeforeToolCallOutput{Block: true, Reason: "no rm", Permission: PermissionDeny}, 1, nil},
		{"deny is block", []hookFn{
			answer(BeforeToolCallOutput{Permission: PermissionDeny}),
			answer(BeforeToolCallOutput{}),
		}, false, BeforeToolCallOutput{Block: true, Reason: "Tool call blocked by hook h0.", Permission: PermissionDeny}, 1, nil},
		{"block:false does nothing", []hookFn{
			answer(BeforeToolCallOutput{Block: false, Reason: "ignored"}),
			answer(BeforeToolCallOutput{}),
		}, false, BeforeToolCallOutput{}, 2, nil},
		{"ask beats allow", []hookFn{
			answer(BeforeToolCallOutput{Permission: PermissionAllow}),
			answer(BeforeToolCallOutput{Permission: PermissionAsk, Reason: "sure?"}),
			answer(BeforeToolCallOutput{Permission: PermissionAllow}),
		}, false, BeforeToolCallOutput{Permission: PermissionAsk, Reason: "sure?"}, 3, nil},
		{"first ask keeps its reason", []hookFn{
			answer(BeforeToolCallOutput{Permission: PermissionAsk, Reason: "first"}),
			answer(BeforeToolCallOutput{Permission: PermissionAsk, Reason: "second"}),
		}, false, BeforeToolCallOutput{Permission: PermissionAsk, Reason: "first"}, 2, nil},
		{"failing guard blocks", []hookFn{failing, answer(BeforeToolCallOutput{})}, false,
			BeforeToolCallOutput{Block: true, Permission: PermissionDeny, Reason: "Tool call blocked because the before_tool_call hook h0 failed."}, 1,
			[]NoticeKind{NoticeError}},
		{"failing fail-open guard passes", []hookFn{failing, answer(BeforeToolCallOutput{Permission: PermissionAllow})}, true,
			BeforeToolCallOutput{Permission: PermissionAllow}, 2, []NoticeKind{NoticeError}},
		{"halt blocks", []hookFn{answer(BeforeToolCallOutput{Halt: "stop everything"}), answer(BeforeToolCallOutput{})}, false,
			BeforeToolCallOutput{Block: true, Permission: PermissionDeny, Halt: "stop everything", Reason: "Tool call blocked by hook h0."}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, rec := newBus(t)
			ran := 0
			for i, h := range tt.hooks {
				b.OnBeforeToolCall(Spec{Name: fmt.Sprintf("h%d", i), Priority: -i, FailOpen: tt.failOpen},
					func(ctx context.Context, in BeforeToolCallInput) (BeforeToolCallOutput, error) {
						ran++
						return h(ctx, in)
					})
			}
			got := b.BeforeToolCall(ctx, BeforeToolCallInput{Call: callOf(`{"command":"ls"}`)})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("merged (-want +got):\n%s", diff)
			}
			if ran != tt.ran {
				t.Errorf("%d hooks ran, want %d", ran, tt.ran)
			}
			if diff := cmp.Diff(tt.notices, rec.kinds()); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBeforeToolCallRewritesChain(t *testing.T) {
	b, _ := newBus(t)
	var seen []string
	for i, rewrite := range []string{`{"command":"ls -a"}`, "", `{"command":"ls -la"}`} {
		b.OnBeforeToolCall(Spec{Priority: -i}, func(_ context.Context, in BeforeToolCallInput) (BeforeToolCallOutput, error) {
			seen = append(seen, string(in.Call.Args))
			return BeforeToolCallOutput{Args: json.RawMessage(rewrite)}, nil
		})
	}
	got := b.BeforeToolCall(ctx, BeforeToolCallInput{Call: callOf(`{"command":"ls"}`)})
	if string(got.Args) != `{"command":"ls -la"}` {
		t.Errorf("final args %s, want the last rewrite", got.Args)
	}
	want := []string{`{"command":"ls"}`, `{"command":"ls -a"}`, `{"command":"ls -a"}`}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("each hook sees the rewrites before it (-want +got):\n%s", diff)
	}
}

func TestToolResultPersistChain(t *testing.T) {
	b, _ := newBus(t)
	if out := b.ToolResultPersist(ctx, ToolResultPersistInput{Result: tool.TextResult("x")}); out.Result != nil {
		t.Fatalf("no hooks: result %+v, want nil", out.Result)
	}
	b.OnToolResultPersist(Spec{Priority: 1}, func(_ context.Context, in ToolResultPersistInput) (ToolResultPersistOutput, error) {
		r := tool.TextResult(in.Result.Text() + "+redacted")
		return ToolResultPersistOutput{Result: &r}, nil
	})
	b.OnToolResultPersist(Spec{}, func(_ context.Context, in ToolResultPersistInput) (ToolResultPersistOutput, error) {
		r := tool.TextResult(in.Result.Text() + "+tagged")
		return ToolResultPersistOutput{Result: &r}, nil
	})
	b.OnToolResultPersist(Spec{Priority: -1}, func(context.Context, ToolResultPersistInput) (ToolResultPersistOutput, error) {
		return ToolResultPersistOutput{}, nil // no opinion keeps the rewrite
	})
	out := b.ToolResultPersist(ctx, ToolResultPersistInput{Result: tool.TextResult("secret")})
	if out.Result == nil || out.Result.Text() != "secret+redacted+tagged" {
		t.Fatalf("result %+v", out.Result)
	}
}

func TestUserPromptSubmitMerge(t *testing.T) {
	b, _ := newBus(t)
	ran := 0
	for _, o := range []UserPromptSubmitOutput{
		{Context: "date: today"},
		{Block: true, Context: "c2"},
		{Context: "never"},
	} {
		b.OnUserPromptSubmit(Spec{Name: "guard"}, func(context.Context, UserPromptSubmitInput) (UserPromptSubmitOutput, error) {
			ran++
			return o, nil
		})
	}
	got := b.UserPromptSubmit(ctx, UserPromptSubmitInput{Prompt: "hi"})
	want := UserPromptSubmitOutput{Block: true, Reason: "The prompt was refused by hook guard.", Context: "date: today\n\nc2"}
	if diff := cmp.Diff(want, got); diff != "" || ran != 2 {
		t.Errorf("ran %d; (-want +got):\n%s", ran, diff)
	}
}

func TestStopMerge(t *testing.T) {
	tests := []struct {
		name string
		outs []StopOutput
		want StopOutput
	}{
		{"all stop", []StopOutput{{}, {Reason: "ignored without Continue"}}, StopOutput{}},
		{"any continues, reasons joined", []StopOutput{{Continue: true, Reason: "tests fail"}, {}, {Continue: true, Reason: "lint fails"}},
			StopOutput{Continue: true, Reason: "tests fail\nlint fails"}},
		{"halt beats continue", []StopOutput{{Continue: true, Reason: "go on"}, {Halt: "budget spent"}, {Continue: true}},
			StopOutput{Halt: "budget spent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBus(t)
			for i, o := range tt.outs {
				b.OnStop(Spec{Priority: -i}, func(context.Context, StopInput) (StopOutput, error) { return o, nil })
			}
			if diff := cmp.Diff(tt.want, b.Stop(ctx, StopInput{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFinalizeFirstActionWins(t *testing.T) {
	b, _ := newBus(t)
	ran := 0
	for _, o := range []BeforeAgentFinalizeOutput{{}, {Action: FinalizeRevise, Reason: "shorter"}, {Action: FinalizeAccept}} {
		b.OnBeforeAgentFinalize(Spec{}, func(context.Context, BeforeAgentFinalizeInput) (BeforeAgentFinalizeOutput, error) {
			ran++
			return o, nil
		})
	}
	got := b.BeforeAgentFinalize(ctx, BeforeAgentFinalizeInput{})
	if got.Action != FinalizeRevise || got.Reason != "shorter" || ran != 2 {
		t.Errorf("got %+v after %d hooks", got, ran)
	}
}

func TestSessionStartContexts(t *testing.T) {
	b, _ := newBus(t)
	for _, c := range []string{"branch: main", "", "todo: 3"} {
		b.OnSessionStart(Spec{}, func(context.Context, SessionStartInput) (SessionStartOutput, error) {
			return SessionStartOutput{Context: c}, nil
		})
	}
	if got := b.SessionStart(ctx, SessionStartInput{Source: "startup"}); got.Context != "branch: main\n\ntodo: 3" {
		t.Errorf("context %q", got.Context)
	}
}

func TestVoidHooksRunConcurrentlyAndAreAwaited(t *testing.T) {
	b, _ := newBus(t)
	// Each hook waits for the other to start: only concurrent hooks finish.
	started := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var finished sync.WaitGroup
	finished.Add(2)
	done := 0
	var mu sync.Mutex
	for i := range 2 {
		b.OnAfterToolCall(Spec{}, func(ctx context.Context, _ AfterToolCallEvent) error {
			defer finished.Done()
			close(started[i])
			select {
			case <-started[1-i]:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			done++
			mu.Unlock()
			return nil
		})
	}
	b.AfterToolCall(ctx, AfterToolCallEvent{})
	mu.Lock()
	defer mu.Unlock()
	if done != 2 {
		t.Fatalf("AfterToolCall returned with %d of 2 hooks done", done)
	}
}

func TestVoidHookTimeoutIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := New(&Options{Report: rec.report, Timeout: 5 * time.Second})
		release := make(chan struct{})
		b.OnAgentEnd(Spec{Name: "stuck"}, func(context.Context, AgentEndEvent) error {
			<-release // ignores its context
			return nil
		})
		var polite atomic.Bool
		b.OnAgentEnd(Spec{Name: "polite", Timeout: time.Second}, func(ctx context.Context, _ AgentEndEvent) error {
			<-ctx.Done()
			polite.Store(true)
			return ctx.Err()
		})
		start := time.Now()
		b.AgentEnd(t.Context(), AgentEndEvent{})
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("AgentEnd returned after %v, want the 5s timeout", d)
		}
		if !polite.Load() {
			t.Error("the hook with a 1s timeout did not see its context end")
		}
		ns := rec.all()
		if len(ns) != 2 {
			t.Fatalf("notices %+v, want two timeouts", ns)
		}
		for _, n := range ns {
			if n.Kind != NoticeTimeout || !errors.Is(n.Err, ErrTimeout) || n.Point != AgentEnd {
				t.Errorf("notice %+v, want a timeout at agent_end", n)
			}
		}
		// The stuck hook still runs; Wait sees it out.
		wctx, cancel := context.WithTimeout(t.Context(), time.Second)
		if err := b.Wait(wctx); err == nil {
			t.Error("Wait returned nil while a hook was still running")
		}
		cancel()
		close(release)
		if err := b.Wait(t.Context()); err != nil {
			t.Errorf("Wait after release: %v", err)
		}
	})
}

func TestModifyingHookTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := New(&Options{Report: rec.report})
		b.OnUserPromptSubmit(Spec{Name: "slow", Timeout: 2 * time.Second}, func(ctx context.Context, _ UserPromptSubmitInput) (UserPromptSubmitOutput, error) {
			<-ctx.Done()
			return UserPromptSubmitOutput{Block: true}, nil // too late: ignored
		})
		b.OnUserPromptSubmit(Spec{Name: "fast"}, func(context.Context, UserPromptSubmitInput) (UserPromptSubmitOutput, error) {
			return UserPromptSubmitOutput{Context: "ok"}, nil
		})
		start := time.Now()
		got := b.UserPromptSubmit(t.Context(), UserPromptSubmitInput{})
		if time.Since(start) != 2*time.Second || got.Block || got.Context != "ok" {
			t.Errorf("after %v got %+v", time.Since(start), got)
		}
		if k := rec.kinds(); len(k) != 1 || k[0] != NoticeTimeout {
			t.Errorf("notices %v", k)
		}
	})
}

func TestPanickingHookIsReportedAndTheRestRun(t *testing.T) {
	b, rec := newBus(t)
	b.OnLLMOutput(Spec{Name: "bad"}, func(context.Context, LLMOutputEvent) error { panic("boom") })
	var observed bool
	b.OnLLMOutput(Spec{Name: "good"}, func(context.Context, LLMOutputEvent) error { observed = true; return nil })
	b.OnStop(Spec{Name: "bad-stop", Priority: 1}, func(context.Context, StopInput) (StopOutput, error) { panic(errors.New("kaput")) })
	b.OnStop(Spec{Name: "good-stop"}, func(context.Context, StopInput) (StopOutput, error) {
		return StopOutput{Continue: true, Reason: "more"}, nil
	})

	b.LLMOutput(ctx, LLMOutputEvent{Message: llm.Message{Role: llm.RoleAssistant}})
	out := b.Stop(ctx, StopInput{})
	if !observed {
		t.Error("the good void hook did not run")
	}
	if !out.Continue || out.Reason != "more" {
		t.Errorf("stop = %+v; the good stop hook's answer was lost", out)
	}
	ns := rec.all()
	if len(ns) != 2 {
		t.Fatalf("notices %+v", ns)
	}
	for _, n := range ns {
		var pe *PanicError
		if n.Kind != NoticePanic || !errors.As(n.Err, &pe) || len(pe.Stack) == 0 || !strings.HasPrefix(n.Hook, "bad") {
			t.Errorf("notice %+v is not a panic report of a bad hook", n)
		}
	}
}

func TestCancelledRunIsNotReported(t *testing.T) {
	b, rec := newBus(t)
	cctx, cancel := context.WithCancel(ctx)
	b.OnLLMInput(Spec{}, func(ctx context.Context, _ LLMInputEvent) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	b.LLMInput(cctx, LLMInputEvent{Request: &llm.Request{}})
	if ns := rec.all(); len(ns) != 0 {
		t.Errorf("notices %+v for a cancelled run", ns)
	}
	// Modifying points do not start hooks once the run is cancelled.
	ran := false
	b.OnStop(Spec{}, func(context.Context, StopInput) (StopOutput, error) { ran = true; return StopOutput{}, nil })
	b.Stop(cctx, StopInput{})
	if ran {
		t.Error("a hook ran after the run was cancelled")
	}
}

func TestNoticeDefaultsToSlog(t *testing.T) {
	var buf strings.Builder
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	b := New(nil)
	b.OnSessionEnd(Spec{Name: "bye"}, func(context.Context, SessionEndEvent) error { return errors.New("disk full") })
	b.SessionEnd(ctx, SessionEndEvent{})
	if out := buf.String(); !strings.Contains(out, "hook=bye") || !strings.Contains(out, "disk full") {
		t.Errorf("slog got %q", out)
	}
}

func TestUnknownPointPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering at an unknown point did not panic")
		}
	}()
	New(nil).add(Point("nope"), Spec{}, nil)
}

func TestPoints(t *testing.T) {
	if len(Points) != numPoints {
		t.Fatalf("%d points, numPoints %d", len(Points), numPoints)
	}
	voids := 0
	for _, p := range Points {
		if !p.Valid() {
			t.Errorf("%s not valid", p)
		}
		if p.Void() {
			voids++
		}
	}
	if voids != 9 || Point("x").Valid() {
		t.Errorf("voids %d", voids)
	}
}

type runKey struct{}

func TestReportGetsTheFireContext(t *testing.T) {
	var got any
	b := New(&Options{Report: func(ctx context.Context, _ Notice) { got = ctx.Value(runKey{}) }})
	b.OnBeforePromptBuild(Spec{}, func(context.Context, BeforePromptBuildInput) (PromptEdit, error) {
		return PromptEdit{}, errors.New("x")
	})
	b.BeforePromptBuild(context.WithValue(ctx, runKey{}, "run-7"), BeforePromptBuildInput{})
	if got != "run-7" {
		t.Errorf("Report saw context value %v, want the fire call's", got)
	}
}

func TestSeamsApprovalWithGoHooks(t *testing.T) {
	tests := []struct {
		name       string
		perm       Permission
		policy     tool.ApprovalPolicy
		wantAsked  bool
		wantAllow  bool
		wantReason string
	}{
		{"allow answers ask mode", PermissionAllow, tool.ApproveAsk, false, true, ""},
		{"no opinion in ask mode asks", PermissionNone, tool.ApproveAsk, true, true, ""},
		{"ask in auto mode asks with the hook's reason", PermissionAsk, tool.ApproveAuto, true, true, "hook says check"},
		{"allow cannot beat never", PermissionAllow, tool.ApproveNever, false, false, "only allows calls that read"},
		{"ask cannot beat never", PermissionAsk, tool.ApproveNever, false, false, "only allows calls that read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBus(t)
			b.OnBeforeToolCall(Spec{}, func(context.Context, BeforeToolCallInput) (BeforeToolCallOutput, error) {
				return BeforeToolCallOutput{Permission: tt.perm, Reason: "hook says check"}, nil
			})
			asked, askedReason := false, ""
			a := &tool.Approval{Policy: tt.policy, Ask: func(_ context.Context, _ tool.Call, reason string) (tool.Answer, error) {
				asked, askedReason = true, reason
				return tool.AnswerYes, nil
			}}
			_, res := b.Seams(SeamsOptions{Approval: a}).BeforeToolCall(ctx, callOf(`{"command":"x"}`))
			if asked != tt.wantAsked || (res == nil) != tt.wantAllow {
				t.Fatalf("asked %v, result %+v", asked, res)
			}
			if tt.wantAsked && tt.perm == PermissionAsk && askedReason != tt.wantReason {
				t.Errorf("asked with reason %q, want %q", askedReason, tt.wantReason)
			}
			if !tt.wantAllow && !strings.Contains(res.Text(), tt.wantReason) {
				t.Errorf("refusal %q lacks %q", res.Text(), tt.wantReason)
			}
		})
	}
}

func TestSeamsStop(t *testing.T) {
	b, _ := newBus(t)
	var actives []bool
	b.OnStop(Spec{}, func(_ context.Context, in StopInput) (StopOutput, error) {
		actives = append(actives, in.Active)
		if in.Active {
			return StopOutput{}, nil
		}
		return StopOutput{Continue: true}, nil // no reason: a default nudge
	})
	seams := b.Seams(SeamsOptions{})
	last := llm.Message{Role: llm.RoleAssistant}
	cont, inject := seams.Stop(ctx, last)
	if !cont || len(inject) != 1 || !strings.HasPrefix(inject[0].Text(), StopFeedbackPrefix) {
		t.Fatalf("first: %v %+v", cont, inject)
	}
	if cont, _ := seams.Stop(ctx, last); cont {
		t.Error("second stop continued")
	}
	if diff := cmp.Diff([]bool{false, true}, actives); diff != "" {
		t.Errorf("Active (-want +got):\n%s", diff)
	}

	// before_agent_finalize can keep the run going through the same seam.
	b2, _ := newBus(t)
	b2.OnBeforeAgentFinalize(Spec{}, func(context.Context, BeforeAgentFinalizeInput) (BeforeAgentFinalizeOutput, error) {
		return BeforeAgentFinalizeOutput{Action: FinalizeRevise, Reason: "cite the file"}, nil
	})
	cont, inject = b2.Seams(SeamsOptions{}).Stop(ctx, last)
	if !cont || inject[len(inject)-1].Text() != StopFeedbackPrefix+"cite the file" {
		t.Errorf("finalize revise: %v %+v", cont, inject)
	}

	// A halt ends the run and calls Halt.
	b3, rec := newBus(t)
	b3.OnStop(Spec{}, func(context.Context, StopInput) (StopOutput, error) { return StopOutput{Halt: "quota"}, nil })
	var halted string
	if cont, _ := b3.Seams(SeamsOptions{Halt: func(r string) { halted = r }}).Stop(ctx, last); cont || halted != "quota" {
		t.Errorf("halt: cont %v halted %q", cont, halted)
	}
	if k := rec.kinds(); len(k) != 1 || k[0] != NoticeMessage {
		t.Errorf("notices %v", k)
	}
}

// A bus shared by concurrent runs: one run's Wait at its end overlaps the
// other runs' fires, which must neither race nor panic, and Wait still
// returns once the hooks are done.
func TestWaitWhileOtherRunsFire(t *testing.T) {
	b, rec := newBus(t)
	var calls atomic.Int64
	b.OnAgentEnd(Spec{Name: "count"}, func(context.Context, AgentEndEvent) error {
		calls.Add(1)
		return nil
	})
	const runs, fires = 4, 200
	var wg sync.WaitGroup
	for range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range fires {
				b.AgentEnd(ctx, AgentEndEvent{})
				if err := b.Wait(ctx); err != nil {
					t.Errorf("Wait: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := b.Wait(ctx); err != nil {
		t.Errorf("final Wait: %v", err)
	}
	if n := calls.Load(); n != runs*fires {
		t.Errorf("hook ran %d times, want %d", n, runs*fires)
	}
	if ns := rec.all(); len(ns) != 0 {
		t.Errorf("unexpected notices: %+v", ns)
	}
}
