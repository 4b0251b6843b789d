package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
)

func TestProfileRotationAndCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Profile a's key is refused; b works.
		models := map[string]*faux.Model{}
		model := func(name string) *faux.Model {
			if models[name] == nil {
				step := faux.Say("answer from " + name)
				if name == "a" {
					step = refuse(llm.ReasonAuth, 401)
				}
				models[name] = faux.New(step)
				models[name].Repeat = true
			}
			return models[name]
		}
		var used []string
		r := testRunner(nil)
		run := func() Result {
			ev := &events{}
			res, err := r.runParams(t.Context(), params{Prompt: "hi", Model: model("a"), Info: llm.ModelInfo{Provider: "p"},
				AuthProfiles: []string{"a", "b"}, OnEvent: ev.add,
				UseProfile: func(_ context.Context, name string) (llm.Model, llm.ModelInfo, error) {
					used = append(used, name)
					return model(name), llm.ModelInfo{Provider: "p"}, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(ev.notices(EventProfileRotation)); n > 1 {
				t.Errorf("%d rotations", n)
			}
			return res
		}
		res := run()
		if !res.OK() || res.Messages[len(res.Messages)-1].Text() != "answer from b" || fmt.Sprint(used) != "[b]" || model("a").Calls() != 1 {
			t.Fatalf("first run: %+v, used %v, a called %d times", res, used, model("a").Calls())
		}
		// a rests for 30 s: the next run starts on b without asking a.
		res = run()
		if !res.OK() || model("a").Calls() != 1 || fmt.Sprint(used) != "[b b]" {
			t.Fatalf("second run: a called %d times, used %v", model("a").Calls(), used)
		}
		time.Sleep(31 * time.Second)
		res = run()
		if !res.OK() || model("a").Calls() != 2 {
			t.Fatalf("after the cooldown the run should try a again: a called %d times", model("a").Calls())
		}
	})
}

func TestModelFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		busy := faux.New(refuse(llm.ReasonOverloaded, 529))
		busy.Repeat = true
		spare := faux.New(faux.Say("from the spare"))
		ev := &events{}
		res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: busy, Info: llm.ModelInfo{Provider: "a", ID: "big"},
			FallbackModels: []string{"b/missing", "b/spare"}, Retry: noJitter(), OnEvent: ev.add,
			ResolveModel: func(_ context.Context, provider, id string) (llm.Model, llm.ModelInfo, error) {
				if id == "missing" {
					return nil, llm.ModelInfo{}, fmt.Errorf("unknown model %s/%s", provider, id)
				}
				return spare, llm.ModelInfo{Provider: provider, ID: id}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() || res.Model != "b/spare" || busy.Calls() != 4 || spare.Calls() != 1 {
			t.Fatalf("%+v; busy called %d times, spare %d", res, busy.Calls(), spare.Calls())
		}
		if len(ev.notices(EventModelFallback)) != 1 || len(ev.notices(EventWarning)) != 1 {
			t.Errorf("events %v", ev.types())
		}
	})
}

// With an auth.Store the cooldowns outlive the Runner: another process
// (here another Runner) starts on the profile that works.
func TestProfileCooldownSharedThroughAuthStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), auth.StateFileName)
	calls := map[string]int{}
	run := func() Result {
		store, err := auth.Open(&auth.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		model := func(name string) llm.Model {
			m := faux.New(faux.Func(func(context.Context, *llm.Request) faux.Step {
				calls[name]++
				if name == "a" {
					return refuse(llm.ReasonAuth, 401)
				}
				return faux.Say("from " + name)
			}))
			m.Repeat = true
			return m
		}
		res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: model("a"), Info: llm.ModelInfo{Provider: "anthropic", ID: "m"},
			AuthProfiles: []string{"a", "b"}, Auth: store,
			UseProfile: func(_ context.Context, name string) (llm.Model, llm.ModelInfo, error) {
				return model(name), llm.ModelInfo{Provider: "anthropic", ID: "m"}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(); !res.OK() || calls["a"] != 1 || calls["b"] != 1 {
		t.Fatalf("first run %+v, calls %v", res, calls)
	}
	if res := run(); !res.OK() || calls["a"] != 1 || calls["b"] != 2 {
		t.Fatalf("second runner: %+v, calls %v: the refused profile should rest", res, calls)
	}
}

// Without Params.Auth the Runner keeps cooldowns in memory by package
// auth's rules: a billing failure rests the profile for hours, not for the
// 30 s of an ordinary failure.
func TestInMemoryCooldownsFollowAuthRules(t *testing.T) {
	tests := []struct {
		name   string
		reason llm.Reason
		status int
		rest   time.Duration // how long a rests after the failure
	}{
		{"auth", llm.ReasonAuth, 401, auth.CooldownFirst},
		{"billing", llm.ReasonBilling, 402, auth.BillingBase},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := faux.New(refuse(tc.reason, tc.status))
				a.Repeat = true
				b := faux.New(faux.Say("from b"))
				b.Repeat = true
				r := testRunner(nil)
				run := func() {
					res, err := r.runParams(t.Context(), params{Prompt: "hi", Model: a, Info: llm.ModelInfo{Provider: "p", ID: "m"},
						AuthProfiles: []string{"a", "b"},
						UseProfile: func(_ context.Context, name string) (llm.Model, llm.ModelInfo, error) {
							if name == "a" {
								return a, llm.ModelInfo{Provider: "p", ID: "m"}, nil
							}
							return b, llm.ModelInfo{Provider: "p", ID: "m"}, nil
						}})
					if err != nil || !res.OK() {
						t.Fatal(err, res)
					}
				}
				run()
				time.Sleep(tc.rest - time.Second)
				run()
				if a.Calls() != 1 {
					t.Fatalf("a was asked again %s after its %s failure, inside its rest of %s", tc.rest-time.Second, tc.reason, tc.rest)
				}
				time.Sleep(2 * time.Second)
				run()
				if a.Calls() != 2 {
					t.Errorf("a was not asked again after its rest of %s (%d calls)", tc.rest, a.Calls())
				}
			})
		})
	}
}

// After a fallback the cascade reads the new model's window: a timed-out
// prompt that is small for the first model but over 65% of the fallback's
// window is compacted, not merely retried.
func TestModelFallbackTakesItsWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		missing := faux.New(refuse(llm.ReasonModelNotFound, 404))
		small := faux.New(refuse(llm.ReasonTimeout, 408), faux.Say("done"))
		ev := &events{}
		fc := &fakeCompactor{}
		history := []llm.Message{llm.UserText(strings.Repeat("context ", 1000)), {Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("ok")}, StopReason: llm.StopReasonStop}}
		res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go on", History: history, Model: missing,
			Info:           llm.ModelInfo{Provider: "a", ID: "big", ContextWindow: 200_000},
			FallbackModels: []string{"b/small"}, Retry: noJitter(), OnEvent: ev.add,
			Compaction: &CompactionSpec{Compactor: fc},
			ResolveModel: func(_ context.Context, provider, id string) (llm.Model, llm.ModelInfo, error) {
				return small, llm.ModelInfo{Provider: provider, ID: id, ContextWindow: 2_000}, nil
			}})
		if err != nil || !res.OK() {
			t.Fatal(err, res)
		}
		if len(ev.notices(EventTimeoutCompaction)) != 1 || fc.recovers != 1 {
			t.Errorf("a prompt over the fallback's window was not compacted after the timeout: %d recoveries, events %v", fc.recovers, ev.types())
		}
	})
}

// A Summarizer without a Model summarises with the model the run is on:
// after a's key is refused, the overflow's compaction asks b, not a.
func TestSummarizerFollowsTheRunsModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		summaries := map[string]int{}
		overflowed := false
		model := func(name string) *faux.Model {
			m := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case len(req.Tools) == 0 && req.SystemPrompt != "You help.":
					summaries[name]++
					return faux.Say("## Goal\nthe summary")
				case name == "a":
					return refuse(llm.ReasonAuth, 401)
				case !overflowed:
					overflowed = true
					return refuse(llm.ReasonContextOverflow, 400)
				}
				return faux.Say("done")
			}))
			m.Repeat = true
			return m
		}
		a, b := model("a"), model("b")
		var history []llm.Message
		for range 60 { // about 30,000 tokens: more than compaction keeps verbatim
			history = append(history, llm.UserText(strings.Repeat("question ", 110)),
				llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("answer ", 140))}, StopReason: llm.StopReasonStop})
		}
		ev := &events{}
		res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go on", History: history, SystemPrompt: "You help.", Model: a,
			Info:         llm.ModelInfo{Provider: "p", ID: "m", ContextWindow: 200_000},
			AuthProfiles: []string{"a", "b"}, OnEvent: ev.add,
			UseProfile: func(_ context.Context, name string) (llm.Model, llm.ModelInfo, error) {
				if name == "a" {
					return a, llm.ModelInfo{Provider: "p", ID: "m"}, nil
				}
				return b, llm.ModelInfo{Provider: "p", ID: "m"}, nil
			},
			Compaction: &CompactionSpec{Summarizer: &compact.Summarizer{}}})
		if err != nil || !res.OK() {
			t.Fatal(err, res, ev.types())
		}
		if summaries["a"] != 0 || summaries["b"] == 0 {
			t.Errorf("summaries written by a: %d, by b: %d; want b only (events %v)", summaries["a"], summaries["b"], ev.types())
		}
	})
}

// When every profile's key is refused the run falls back to another model,
// and the last profile tried rests like the ones before it.
func TestFallbackMarksTheLastProfile(t *testing.T) {
	store, err := auth.Open(&auth.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	dead := faux.New(refuse(llm.ReasonAuth, 401))
	dead.Repeat = true
	spare := faux.New(faux.Say("from the spare"))
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: dead, Info: llm.ModelInfo{Provider: "p", ID: "m"},
		AuthProfiles: []string{"a", "b"}, Auth: store, FallbackModels: []string{"q/spare"},
		UseProfile: func(context.Context, string) (llm.Model, llm.ModelInfo, error) {
			return dead, llm.ModelInfo{Provider: "p", ID: "m"}, nil
		},
		ResolveModel: func(_ context.Context, provider, id string) (llm.Model, llm.ModelInfo, error) {
			return spare, llm.ModelInfo{Provider: provider, ID: id}, nil
		}})
	if err != nil || !res.OK() || res.Model != "q/spare" {
		t.Fatal(err, res)
	}
	usable, err := store.Usable("p", "m", []string{"a", "b"})
	if err != nil || len(usable) != 0 {
		t.Errorf("profiles still usable after both keys were refused: %v (%v)", usable, err)
	}
}

// A fallback model's output limit caps what the agent asks for, although
// the agent was configured with the first model's larger limit: a cut-off
// reply is asked again with the fallback's limit, not the first model's.
func TestModelFallbackTakesItsOutputLimit(t *testing.T) {
	missing := faux.New(refuse(llm.ReasonModelNotFound, 404))
	small := faux.New(faux.Say("Part one").WithStop(llm.StopReasonLength), faux.Say("Part one and two."))
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "write", Model: missing, Options: llm.Options{MaxTokens: 1000},
		Info:           llm.ModelInfo{Provider: "a", ID: "big", MaxTokens: 64_000},
		FallbackModels: []string{"b/small"},
		ResolveModel: func(_ context.Context, provider, id string) (llm.Model, llm.ModelInfo, error) {
			return small, llm.ModelInfo{Provider: provider, ID: id, MaxTokens: 8_000}, nil
		}})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	reqs := small.Requests()
	if len(reqs) != 2 || reqs[0].Options.MaxTokens != 1000 || reqs[1].Options.MaxTokens != 8_000 {
		for i, r := range reqs {
			t.Logf("request %d asked for %d tokens", i, r.Options.MaxTokens)
		}
		t.Errorf("the fallback got %d requests; want 1000 tokens, then its own limit of 8000", len(reqs))
	}
}

// A switch of model or of thinking level is recorded in the session, so a
// resumed session knows what the run ended on.
func TestSwitchesRecordedInSession(t *testing.T) {
	tests := []struct {
		name  string
		first faux.Step
		want  session.Entry
	}{
		{"model fallback", refuse(llm.ReasonModelNotFound, 404), session.ModelChangeEntry("b", "spare")},
		{"thinking fallback", faux.Refuse(llm.ReasonFormat, 400, `reasoning effort "xhigh" is not supported by this model. Supported values are: "low", "medium"`),
			session.ThinkingLevelEntry(llm.ThinkingLow)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := session.NewJSONLStore(t.TempDir())
			first := faux.New(tc.first, faux.Say("from the first"))
			spare := faux.New(faux.Say("from the spare"))
			res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: first, Info: llm.ModelInfo{Provider: "a", ID: "big"},
				Options: llm.Options{Thinking: llm.ThinkingXHigh}, FallbackModels: []string{"b/spare"},
				Store: store, Session: SessionSpec{Cwd: t.TempDir()},
				ResolveModel: func(_ context.Context, provider, id string) (llm.Model, llm.ModelInfo, error) {
					return spare, llm.ModelInfo{Provider: provider, ID: id}, nil
				}})
			if err != nil || !res.OK() {
				t.Fatal(err, res)
			}
			tr, err := store.Load(t.Context(), res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range tr.Entries {
				found = found || e.Type == tc.want.Type && e.Provider == tc.want.Provider && e.ModelID == tc.want.ModelID && e.ThinkingLevel == tc.want.ThinkingLevel
			}
			if !found {
				t.Errorf("no %s entry %+v in the transcript", tc.want.Type, tc.want)
			}
			if err := session.CheckPairing(tr.Context("").Messages); err != nil {
				t.Error(err)
			}
		})
	}
}
