package failover_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/failover"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// This file drives auth and failover the way the runner is meant to: a
// chain of candidate models; per model, a profile from the auth store; per
// failed call, failover.Next, then the plan applied. The "provider" is a
// faux model per (model, profile), scripted with classified failures.

type driver struct {
	store    *auth.Store
	profiles map[string][]string    // provider -> profile ids, file order
	models   map[string]*faux.Model // "provider/model|profile" -> script
	log      []string               // what happened, in order
	switches []*failover.FailoverError
}

func (d *driver) call(ctx context.Context, model, profile string, thinking llm.ThinkingLevel) error {
	m := d.models[model+"|"+profile]
	if m == nil {
		return errors.New("no script for " + model + "|" + profile)
	}
	for ev, err := range m.Stream(ctx, &llm.Request{Messages: []llm.Message{llm.UserText("hi")}, Options: llm.Options{Thinking: thinking}}) {
		if err != nil {
			return err
		}
		if ev.Type == llm.EventError {
			return ev.Err
		}
	}
	return nil
}

func providerOf(model string) string { p, _, _ := strings.Cut(model, "/"); return p }

// run walks the chain; preferred is the session's sticky profile.
func (d *driver) run(ctx context.Context, chain []string, preferred string) (model, profile string, err error) {
	var last error
	for i, model := range chain {
		provider := providerOf(model)
		ids := d.profiles[provider]
		fallback := i < len(chain)-1
		if i > 0 && len(d.switches) > 0 {
			d.switches[len(d.switches)-1].To = model
		}
		profile, err := d.store.Select(provider, model, ids, preferred)
		var ex *auth.ExhaustedError
		if errors.As(err, &ex) {
			try, why := failover.GateCandidate(failover.Gate{Provider: provider, Reason: ex.Reason, Primary: i == 0,
				HasFallbacks: fallback, Now: time.Now(), SoonestExpiry: ex.Until})
			d.log = append(d.log, "gate "+model+": "+why)
			if !try {
				last = err
				continue
			}
			profile = ids[0]
		} else if err != nil {
			return "", "", err
		}
		thinking := llm.ThinkingHigh
		attempted := []llm.ThinkingLevel{thinking}
		var tried []string
		retries, rlRotations := 0, 0
	attempts:
		for {
			err := d.call(ctx, model, profile, thinking)
			if err == nil {
				d.log = append(d.log, "ok "+model+"|"+profile)
				return model, profile, d.store.MarkGood(provider, profile, model)
			}
			f := failover.FailureOf(err)
			left, serr := d.store.Usable(provider, model, ids, append(tried, profile)...)
			if serr != nil {
				return "", "", serr
			}
			p := failover.Next(f, failover.State{ProfilesLeft: len(left), FallbackConfigured: fallback,
				AttemptedThinking: attempted, RateLimitRotations: rlRotations, RetriesExhausted: retries >= 3})
			d.log = append(d.log, string(p.Step)+" "+model+"|"+profile+" ("+string(f.Reason)+")")
			if p.Mark {
				if _, err := d.store.MarkFailure(provider, profile, model, f.Reason); err != nil {
					return "", "", err
				}
			}
			switch p.Step {
			case failover.StepRotateProfile:
				if f.Reason == llm.ReasonRateLimit {
					rlRotations++
				}
				tried = append(tried, profile)
				next, err := d.store.Select(provider, model, ids, "", tried...)
				if err != nil { // gone meanwhile (another process): fail over
					last = failover.NewFailoverError(model, f.Reason, err)
					break attempts
				}
				profile = next
			case failover.StepLowerThinking:
				thinking = p.Thinking
				attempted = append(attempted, thinking)
			case failover.StepRetry:
				retries++ // the runner waits runner.RetryPolicy.Backoff(retries, f.RetryAfter) here
			case failover.StepFallbackModel:
				fe := failover.NewFailoverError(model, p.Reason, err)
				d.switches = append(d.switches, fe)
				last = fe
				break attempts
			default: // surface, or none (overflow: the runner's compaction cascade)
				return "", "", err
			}
		}
	}
	return "", "", last
}

func newDriver(t *testing.T, path string) *driver {
	store, err := auth.Open(&auth.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return &driver{store: store, profiles: map[string][]string{"anthropic": {"A", "B"}, "openai": {auth.DefaultProfile}},
		models: map[string]*faux.Model{}}
}

func (d *driver) script(key string, steps ...faux.Step) { d.models[key] = faux.New(steps...) }

var (
	ok401 = faux.Refuse(llm.ReasonAuth, 401, "invalid x-api-key")
	ok429 = faux.Refuse(llm.ReasonRateLimit, 429, "rate limited")
	chain = []string{"anthropic/claude", "openai/gpt"}
)

func TestDriveAuthFailureRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), auth.StateFileName)
	d := newDriver(t, path)
	d.script("anthropic/claude|A", ok401)
	d.script("anthropic/claude|B", faux.Say("hello"), faux.Say("hello again"))
	model, profile, err := d.run(context.Background(), chain, "")
	if err != nil || model != "anthropic/claude" || profile != "B" {
		t.Fatalf("run = %s|%s %v; log %q", model, profile, err, d.log)
	}
	// A is cooling down, still after a restart: the next run goes to B
	// directly, without touching A.
	d2 := newDriver(t, path)
	d2.models = d.models
	if _, profile, err := d2.run(context.Background(), chain, "A"); err != nil || profile != "B" || d.models["anthropic/claude|A"].Calls() != 1 {
		t.Fatalf("after restart: %s %v, A called %d times; log %q", profile, err, d.models["anthropic/claude|A"].Calls(), d2.log)
	}
}

func TestDriveRateLimitRotatesAtOnce(t *testing.T) {
	d := newDriver(t, filepath.Join(t.TempDir(), auth.StateFileName))
	d.script("anthropic/claude|A", ok429)
	d.script("anthropic/claude|B", faux.Say("hello"))
	if _, profile, err := d.run(context.Background(), chain, ""); err != nil || profile != "B" {
		t.Fatalf("run = %s %v; log %q", profile, err, d.log)
	}
	want := []string{"rotate_profile anthropic/claude|A (rate_limit)", "ok anthropic/claude|B"}
	if !slices.Equal(d.log, want) {
		t.Errorf("log %q, want %q (no wait before rotating)", d.log, want)
	}
}

func TestDriveAllProfilesDeadFailsOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), auth.StateFileName)
	d := newDriver(t, path)
	d.script("anthropic/claude|A", ok401)
	d.script("anthropic/claude|B", ok401)
	d.script("openai/gpt|", faux.Say("from the fallback"), faux.Say("again"))
	model, _, err := d.run(context.Background(), chain, "")
	if err != nil || model != "openai/gpt" {
		t.Fatalf("run = %s %v; log %q", model, err, d.log)
	}
	if len(d.switches) != 1 || d.switches[0].From != "anthropic/claude" || d.switches[0].To != "openai/gpt" || d.switches[0].Reason != llm.ReasonAuth {
		t.Errorf("switches %+v", d.switches)
	}
	// The next run skips the dead provider without calling it.
	d2 := newDriver(t, path)
	d2.models = d.models
	if model, _, err := d2.run(context.Background(), chain, ""); err != nil || model != "openai/gpt" {
		t.Fatalf("second run = %s %v", model, err)
	}
	if d.models["anthropic/claude|A"].Calls() != 1 || !strings.HasPrefix(d2.log[0], "gate anthropic/claude: ") {
		t.Errorf("second run log %q", d2.log)
	}
}

func TestDriveUnsupportedThinkingLowers(t *testing.T) {
	d := newDriver(t, filepath.Join(t.TempDir(), auth.StateFileName))
	var levels []llm.ThinkingLevel
	d.models["anthropic/claude|A"] = faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
		levels = append(levels, req.Options.Thinking)
		if req.Options.Thinking != llm.ThinkingOff {
			return faux.Refuse(llm.ReasonFormat, 400, `think value "high" is not supported for this model`)
		}
		return faux.Say("ok")
	}))
	d.models["anthropic/claude|A"].Repeat = true
	if _, profile, err := d.run(context.Background(), chain, ""); err != nil || profile != "A" {
		t.Fatalf("run = %s %v; log %q", profile, err, d.log)
	}
	if !slices.Equal(levels, []llm.ThinkingLevel{llm.ThinkingHigh, llm.ThinkingOff}) {
		t.Errorf("levels %v", levels)
	}
}

func TestDriveOverflowNeverFailsOver(t *testing.T) {
	d := newDriver(t, filepath.Join(t.TempDir(), auth.StateFileName))
	d.script("anthropic/claude|A", faux.Refuse(llm.ReasonContextOverflow, 400, "prompt is too long: 210000 tokens > 200000 maximum"))
	_, _, err := d.run(context.Background(), chain, "")
	if llm.ReasonOf(err) != llm.ReasonContextOverflow || len(d.switches) != 0 {
		t.Errorf("err %v, switches %d", err, len(d.switches))
	}
}
