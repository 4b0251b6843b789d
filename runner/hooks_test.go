package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
)

func TestRunHookPoints(t *testing.T) {
	spec := hook.Spec{Name: "test"}
	tests := []struct {
		name   string
		setup  func(b *hook.Bus)
		reason string
		calls  int
		check  func(t *testing.T, req *llm.Request, ev *events)
	}{
		{name: "prompt blocked", reason: ReasonPromptBlocked, calls: 0, setup: func(b *hook.Bus) {
			b.OnUserPromptSubmit(spec, func(context.Context, hook.UserPromptSubmitInput) (hook.UserPromptSubmitOutput, error) {
				return hook.UserPromptSubmitOutput{Block: true, Reason: "no secrets in prompts"}, nil
			})
		}},
		{name: "session and prompt context reach the model", reason: ReasonStop, calls: 1, setup: func(b *hook.Bus) {
			b.OnSessionStart(spec, func(context.Context, hook.SessionStartInput) (hook.SessionStartOutput, error) {
				return hook.SessionStartOutput{Context: "branch: main"}, nil
			})
			b.OnUserPromptSubmit(spec, func(context.Context, hook.UserPromptSubmitInput) (hook.UserPromptSubmitOutput, error) {
				return hook.UserPromptSubmitOutput{Context: "ticket: AL-7"}, nil
			})
		}, check: func(t *testing.T, req *llm.Request, _ *events) {
			got := req.Messages[len(req.Messages)-1].Text()
			if !strings.Contains(got, "hello") || !strings.Contains(got, "branch: main") || !strings.Contains(got, "ticket: AL-7") {
				t.Errorf("prompt sent: %q", got)
			}
		}},
		{name: "prompt build edits the system prompt and the prompt", reason: ReasonStop, calls: 1, setup: func(b *hook.Bus) {
			b.OnBeforePromptBuild(spec, func(context.Context, hook.BeforePromptBuildInput) (hook.PromptEdit, error) {
				return hook.PromptEdit{PrependContext: "CONTEXT-FIRST", AppendSystemContext: "SYSTEM-TAIL"}, nil
			})
		}, check: func(t *testing.T, req *llm.Request, _ *events) {
			if !strings.HasSuffix(req.SystemPrompt, "SYSTEM-TAIL") || !strings.HasPrefix(req.Messages[0].Text(), "CONTEXT-FIRST") {
				t.Errorf("system %q, prompt %q", req.SystemPrompt, req.Messages[0].Text())
			}
		}},
		{name: "halt before the run", reason: ReasonHalted, calls: 0, setup: func(b *hook.Bus) {
			b.OnSessionStart(spec, func(context.Context, hook.SessionStartInput) (hook.SessionStartOutput, error) {
				return hook.SessionStartOutput{Halt: "maintenance window"}, nil
			})
		}},
		{name: "a failing hook is an event, not a failure", reason: ReasonStop, calls: 1, setup: func(b *hook.Bus) {
			b.OnLLMOutput(spec, func(context.Context, hook.LLMOutputEvent) error { return errors.New("observer broke") })
		}, check: func(t *testing.T, _ *llm.Request, ev *events) {
			found := false
			for _, e := range ev.evs {
				if e.Type == agent.EventHookError && errOf(e) != nil && strings.Contains(errOf(e).Error(), "observer broke") {
					found = true
				}
			}
			if !found {
				t.Errorf("no hook_error event: %v", ev.types())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store := session.NewJSONLStore(dir)
			m := faux.New(faux.Say("hi"))
			ev := &events{}
			res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hello", SystemPrompt: "You help.", Model: m,
				Hooks: &hook.LoadOptions{Home: t.TempDir(), Workspace: t.TempDir()}, RegisterHooks: tc.setup,
				Store: store, Session: SessionSpec{Cwd: t.TempDir()}, OnEvent: ev.add})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason || m.Calls() != tc.calls {
				t.Fatalf("reason %s (%s) after %d calls, want %s after %d", res.Reason, res.Message, m.Calls(), tc.reason, tc.calls)
			}
			if tc.calls == 0 {
				if files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl")); len(files) != 0 {
					t.Errorf("a run that never started left %v", files)
				}
			}
			if tc.check != nil {
				reqs := m.Requests()
				tc.check(t, &reqs[0], ev)
			}
		})
	}
}

func TestRunModelHookSwitchesModel(t *testing.T) {
	bus := hook.New(nil)
	bus.OnBeforeModelResolve(hook.Spec{Name: "router"}, func(context.Context, hook.BeforeModelResolveInput) (hook.BeforeModelResolveOutput, error) {
		return hook.BeforeModelResolveOutput{Model: "cheap"}, nil
	})
	first, cheap := faux.New(faux.Say("expensive")), faux.New(faux.Say("cheap"))
	var asked string
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: first, Info: llm.ModelInfo{Provider: "faux", ID: "big"}, Bus: bus,
		ResolveModel: func(_ context.Context, provider, model string) (llm.Model, llm.ModelInfo, error) {
			asked = provider + "/" + model
			return cheap, llm.ModelInfo{Provider: provider, ID: model}, nil
		}})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	if asked != "faux/cheap" || first.Calls() != 0 || cheap.Calls() != 1 {
		t.Errorf("asked %q; calls big %d, cheap %d", asked, first.Calls(), cheap.Calls())
	}
}

// A before_agent_finalize hook that asks for a revision keeps the run going
// with its reason as the model's next instruction.
func TestRunFinalizeRevision(t *testing.T) {
	asked := 0
	m := faux.New(faux.Say("draft"), faux.Say("final"))
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "write", Model: m, RegisterHooks: func(b *hook.Bus) {
		b.OnBeforeAgentFinalize(hook.Spec{Name: "reviewer"}, func(_ context.Context, in hook.BeforeAgentFinalizeInput) (hook.BeforeAgentFinalizeOutput, error) {
			asked++
			if in.Last.Text() == "draft" {
				return hook.BeforeAgentFinalizeOutput{Action: hook.FinalizeRevise, Reason: "add a title"}, nil
			}
			return hook.BeforeAgentFinalizeOutput{Action: hook.FinalizeAccept}, nil
		})
	}})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	last := m.Requests()[1].Messages
	if m.Calls() != 2 || asked != 2 || !strings.Contains(last[len(last)-1].Text(), "add a title") {
		t.Errorf("calls %d, hook asked %d times, last instruction %q", m.Calls(), asked, last[len(last)-1].Text())
	}
}

// A reply cut off at its output limit is withdrawn and asked again with the
// model's limit; what it cost still counts.
func TestRunCutOffReplyCounts(t *testing.T) {
	cut := faux.Say("Part one").WithStop(llm.StopReasonLength)
	cut.Usage = &llm.Usage{Input: 100, Output: 1000}
	whole := faux.Say("Part one and two.")
	whole.Usage = &llm.Usage{Input: 100, Output: 1500}
	m := faux.New(cut, whole)
	m.Info.MaxTokens = 32_000
	ev := &events{}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "write", Model: m, Info: m.ModelInfo(), Options: llm.Options{MaxTokens: 1000}, OnEvent: ev.add})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	if got := m.Requests()[1].Options.MaxTokens; got != 32_000 {
		t.Errorf("the second call asked for %d tokens", got)
	}
	if res.Usage.Output != 2500 || len(res.Messages) != 2 {
		t.Errorf("usage %+v, messages %d: the withdrawn reply must count and not be kept", res.Usage, len(res.Messages))
	}
}

// A bus the caller shares between runs is never changed by them: each run's
// RegisterHooks goes on a bus derived from it, so hooks do not pile up and
// fire once per run, while the shared bus's own hooks fire in every run.
func TestRunSharedBusDoesNotCollectHooks(t *testing.T) {
	shared := hook.New(nil)
	sharedCalls := 0
	shared.OnLLMOutput(hook.Spec{Name: "shared"}, func(context.Context, hook.LLMOutputEvent) error { sharedCalls++; return nil })
	r := testRunner(nil)
	for i := range 3 {
		runCalls := 0
		m := faux.New(faux.Say("hi"))
		res, err := r.runParams(t.Context(), params{Prompt: "hello", Model: m, Bus: shared, RegisterHooks: func(b *hook.Bus) {
			b.OnLLMOutput(hook.Spec{Name: "per-run"}, func(context.Context, hook.LLMOutputEvent) error { runCalls++; return nil })
		}})
		if err != nil || !res.OK() {
			t.Fatal(err, res)
		}
		if runCalls != 1 || sharedCalls != i+1 {
			t.Errorf("run %d: its own hook fired %d times, the shared one %d times in all", i, runCalls, sharedCalls)
		}
		if n := shared.Len(hook.LLMOutput); n != 1 {
			t.Fatalf("run %d: the shared bus holds %d llm_output hooks, want its own 1", i, n)
		}
	}
}

// before_agent_finalize hears of every end of the run exactly once: while
// the Stop seam runs (it asks the finalize hooks itself) and after the stop
// continuations are spent, when the agent no longer calls Stop.
func TestRunFinalizeAskedOnceAtEveryEnd(t *testing.T) {
	tests := []struct {
		name       string
		stopBlocks int // how often the stop hook keeps the run going
		calls      int
	}{
		{"no stop hook", 0, 1},
		{"stop hook blocks once", 1, 2},
		{"stop continuations spent", agent.DefaultMaxStopContinuations + 2, agent.DefaultMaxStopContinuations + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := faux.New(faux.Say("answer"))
			m.Repeat = true
			finals, stops := 0, 0
			res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m, RegisterHooks: func(b *hook.Bus) {
				b.OnStop(hook.Spec{Name: "stop"}, func(context.Context, hook.StopInput) (hook.StopOutput, error) {
					stops++
					return hook.StopOutput{Continue: stops <= tc.stopBlocks, Reason: "keep going"}, nil
				})
				b.OnBeforeAgentFinalize(hook.Spec{Name: "final"}, func(context.Context, hook.BeforeAgentFinalizeInput) (hook.BeforeAgentFinalizeOutput, error) {
					finals++
					return hook.BeforeAgentFinalizeOutput{Action: hook.FinalizeAccept}, nil
				})
			}})
			if err != nil || !res.OK() {
				t.Fatal(err, res)
			}
			if m.Calls() != tc.calls || finals != 1 {
				t.Errorf("%d model calls (want %d); before_agent_finalize asked %d times, want once", m.Calls(), tc.calls, finals)
			}
		})
	}
}

// A command hook that fails is reported with what it printed, not with a
// bare "exit status 1".
func TestCommandHookErrorCarriesItsOutput(t *testing.T) {
	home := t.TempDir()
	settings := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo 'lint server unreachable' >&2; exit 1"}]}]}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hello", Model: faux.New(faux.Say("hi")),
		Hooks: &hook.LoadOptions{Home: home, Workspace: t.TempDir()}, OnEvent: ev.add})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	for _, e := range ev.evs {
		if e.Type == agent.EventHookError && errOf(e) != nil {
			if !strings.Contains(errOf(e).Error(), "lint server unreachable") {
				t.Errorf("hook_error says %q, without the hook's own words", errOf(e))
			}
			return
		}
	}
	t.Errorf("no hook_error event: %v", ev.types())
}

// run_end is the last event of a run, after what the end of the run still
// reports (a session_end hook's failure here), so a client may stop at it.
func TestRunEndIsLast(t *testing.T) {
	ev := &events{}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hello", Model: faux.New(faux.Say("hi")), OnEvent: ev.add,
		Store: session.NewJSONLStore(t.TempDir()), Session: SessionSpec{Cwd: t.TempDir()},
		RegisterHooks: func(b *hook.Bus) {
			b.OnSessionEnd(hook.Spec{Name: "late"}, func(context.Context, hook.SessionEndEvent) error {
				return errors.New("late failure")
			})
		}})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	types := ev.types()
	sawLate := false
	for _, e := range ev.evs {
		sawLate = sawLate || e.Type == agent.EventHookError && errOf(e) != nil && strings.Contains(errOf(e).Error(), "late failure")
	}
	if !sawLate || len(types) == 0 || types[len(types)-1] != string(EventRunEnd) {
		t.Errorf("events end with %v (late hook error seen: %v); want run_end last", types[max(0, len(types)-3):], sawLate)
	}
}
