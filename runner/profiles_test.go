package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
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
		r := New(nil)
		run := func() Result {
			ev := &events{}
			res, err := r.Run(t.Context(), Params{Prompt: "hi", Model: model("a"), Info: llm.ModelInfo{Provider: "p"},
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

func TestCooldowns(t *testing.T) {
	var c cooldowns
	now := time.Unix(1_000_000, 0)
	steps := []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 30 * time.Second},
		{10 * time.Second, 20 * time.Second}, // inside the cooldown: not extended
		{40 * time.Second, 60 * time.Second}, // second failure in a row
		{2 * time.Minute, 5 * time.Minute},
		{10 * time.Minute, 5 * time.Minute},
		{10*time.Minute + 25*time.Hour, 30 * time.Second}, // a quiet day starts over
	}
	for _, s := range steps {
		if got := c.fail("p/a", now.Add(s.at)); got != s.want {
			t.Errorf("failure at +%s rests %s, want %s", s.at, got, s.want)
		}
	}
	c.good("p/a")
	if c.resting("p/a", now.Add(10*time.Minute+25*time.Hour)) {
		t.Error("a profile that worked still rests")
	}
}

func TestModelFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		busy := faux.New(refuse(llm.ReasonOverloaded, 529))
		busy.Repeat = true
		spare := faux.New(faux.Say("from the spare"))
		ev := &events{}
		res, err := New(nil).Run(t.Context(), Params{Prompt: "hi", Model: busy, Info: llm.ModelInfo{Provider: "a", ID: "big"},
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
		res, err := New(nil).Run(t.Context(), Params{Prompt: "hi", Model: model("a"), Info: llm.ModelInfo{Provider: "anthropic", ID: "m"},
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
