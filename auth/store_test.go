package auth

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/llm"
)

// testClock is a fake testClock tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock { return &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func open(t *testing.T, path string, c *testClock) *Store {
	t.Helper()
	s, err := Open(&Config{Path: path, Clock: clock.At(c.Now)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustSelect(t *testing.T, s *Store, model string, ids []string, preferred string, tried ...string) string {
	t.Helper()
	id, err := s.Select("anthropic", model, ids, preferred, tried...)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	return id
}

func mark(t *testing.T, s *Store, id, model string, r llm.Reason) *ProfileState {
	t.Helper()
	p, err := s.MarkFailure("anthropic", id, model, r)
	if err != nil {
		t.Fatalf("MarkFailure: %v", err)
	}
	return p
}

var ab = []string{"A", "B"}

// A 401 on A moves the run to B; A is cooling down, still after a
// restart (a new Store on the same file), and usable again after 30 s.
func TestAuthFailureRotatesAndPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFileName)
	c := newClock()
	s := open(t, path, c)
	if got := mustSelect(t, s, "m", ab, ""); got != "A" {
		t.Fatalf("first pick = %s, want A", got)
	}
	p := mark(t, s, "A", "m", llm.ReasonAuth)
	if want := c.Now().Add(CooldownFirst); !p.CooldownUntil.Equal(want) || p.CooldownModel != "" {
		t.Fatalf("A after a 401: %+v, want cooldown until %v for every model", p, want)
	}
	if got := mustSelect(t, s, "m", ab, "A"); got != "B" {
		t.Fatalf("after a 401 on A picked %s, want B", got)
	}
	restarted := open(t, path, c)
	if got := mustSelect(t, restarted, "other-model", ab, ""); got != "B" {
		t.Fatalf("after a restart picked %s, want B (A still cooling)", got)
	}
	st, err := restarted.Status(nil)
	if err != nil || len(st) != 1 || st[0].Profile != "A" || st[0].State != StateCooldown || st[0].Reason != llm.ReasonAuth || st[0].ErrorCount != 1 {
		t.Fatalf("status after restart = %+v, %v", st, err)
	}
	c.Advance(CooldownFirst)
	if got := mustSelect(t, restarted, "m", ab, ""); got != "A" {
		t.Fatalf("after the cooldown picked %s, want A", got)
	}
}

// A rate limit on one of two profiles rotates at once, for the model that
// failed only; a second rate limit on another model widens it.
func TestRateLimitScopedToModel(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	mark(t, s, "A", "m1", llm.ReasonRateLimit)
	if got := mustSelect(t, s, "m1", ab, "A"); got != "B" {
		t.Errorf("m1 after a rate limit on A picked %s, want B", got)
	}
	if got := mustSelect(t, s, "m2", ab, "A"); got != "A" {
		t.Errorf("m2 picked %s, want A (the cooldown is m1's)", got)
	}
	c.Advance(5 * time.Second)
	p := mark(t, s, "A", "m2", llm.ReasonRateLimit)
	if p.CooldownModel != "" || p.ErrorCount != 2 || !p.CooldownUntil.Equal(c.Now().Add(-5*time.Second).Add(CooldownFirst)) {
		t.Errorf("after a second model's rate limit: %+v, want the same end widened to the profile", p)
	}
	if got := mustSelect(t, s, "m2", ab, "A"); got != "B" {
		t.Errorf("m2 after widening picked %s, want B", got)
	}
}

func TestExhausted(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	mark(t, s, "A", "m", llm.ReasonRateLimit)
	c.Advance(time.Second)
	mark(t, s, "B", "m", llm.ReasonAuth)
	_, err := s.Select("anthropic", "m", ab, "A")
	var ex *ExhaustedError
	if !errors.Is(err, ErrExhausted) || !errors.As(err, &ex) {
		t.Fatalf("Select with every profile cooling = %v, want ErrExhausted", err)
	}
	if ex.Reason != llm.ReasonAuth || !ex.Until.Equal(c.Now().Add(-time.Second).Add(CooldownFirst)) {
		t.Errorf("exhausted = %+v, want reason auth and A's end", ex)
	}
	reason, until, all, err := s.Cooling("anthropic", "m", ab)
	if err != nil || !all || reason != llm.ReasonAuth || !until.Equal(ex.Until) {
		t.Errorf("Cooling = %s %v %v %v", reason, until, all, err)
	}
	// Profiles tried in this run count as used up too.
	if _, err := s.Select("anthropic", "other", ab, "", "A", "B"); !errors.Is(err, ErrExhausted) {
		t.Errorf("Select with every profile tried = %v, want ErrExhausted", err)
	}
	if got, err := s.Usable("anthropic", "other", ab); err != nil || len(got) != 1 || got[0] != "A" {
		t.Errorf("Usable for another model = %v %v, want [A] (A's rate limit is m's, B's 401 is the profile's)", got, err)
	}
	if got, err := s.Usable("anthropic", "other", ab, "A"); err != nil || len(got) != 0 {
		t.Errorf("Usable for another model without A = %v %v, want none", got, err)
	}
}

func TestCooldownRules(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	t0 := c.Now()

	// An active cooldown is not moved by failures inside it, but they count.
	mark(t, s, "A", "m", llm.ReasonAuth)
	c.Advance(10 * time.Second)
	p := mark(t, s, "A", "m", llm.ReasonAuth)
	if !p.CooldownUntil.Equal(t0.Add(CooldownFirst)) || p.ErrorCount != 2 {
		t.Errorf("retry inside the cooldown: %+v, want the end unchanged and 2 errors", p)
	}
	// After it ran out the count restarts: no escalation after a quiet period.
	c.Advance(CooldownFirst)
	p = mark(t, s, "A", "m", llm.ReasonAuth)
	if p.ErrorCount != 1 || !p.CooldownUntil.Equal(c.Now().Add(CooldownFirst)) {
		t.Errorf("after the cooldown: %+v, want 1 error and a fresh 30 s", p)
	}

	// Timeouts, network failures and overflows never mark; neither does OpenRouter.
	for _, r := range []llm.Reason{llm.ReasonTimeout, llm.ReasonNetwork, llm.ReasonContextOverflow, ""} {
		if p, err := s.MarkFailure("anthropic", "B", "m", r); p != nil || err != nil {
			t.Errorf("MarkFailure(%q) = %+v %v, want no mark", r, p, err)
		}
	}
	if p, _ := s.MarkFailure("openrouter", "B", "m", llm.ReasonRateLimit); p != nil {
		t.Errorf("an OpenRouter profile was marked: %+v", p)
	}
	if got := mustSelect(t, s, "m", ab, "B"); got != "B" {
		t.Errorf("B after ignored failures: picked %s", got)
	}

	// Overloaded cools the whole profile.
	p = mark(t, s, "B", "m", llm.ReasonOverloaded)
	if p.CooldownModel != "" || p.CooldownReason != llm.ReasonOverloaded || !p.DisabledUntil.IsZero() {
		t.Errorf("overloaded: %+v, want a profile-wide cooldown", p)
	}
}

func TestDisableWindows(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	p := mark(t, s, "A", "m", llm.ReasonBilling)
	if !p.DisabledUntil.Equal(c.Now().Add(BillingBase)) || p.DisabledReason != llm.ReasonBilling || !p.CooldownUntil.IsZero() {
		t.Errorf("billing: %+v, want disabled for 5 h", p)
	}
	p = mark(t, s, "B", "m", llm.ReasonAuthPermanent)
	if !p.DisabledUntil.Equal(c.Now().Add(AuthPermanentBase)) {
		t.Errorf("auth_permanent: %+v, want disabled for 10 min", p)
	}
	st, _ := s.Status(nil)
	if len(st) != 2 || st[0].State != StateDisabled || st[1].State != StateDisabled {
		t.Errorf("status = %+v", st)
	}
	// Counters restart after 24 h without failures.
	c.Advance(FailureWindow + time.Hour)
	p = mark(t, s, "A", "m", llm.ReasonBilling)
	if p.ErrorCount != 1 || p.FailureCounts[llm.ReasonBilling] != 1 {
		t.Errorf("after 24 h: %+v, want counters restarted", p)
	}
}

func TestCooldownTables(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 30 * time.Second, 1: 30 * time.Second, 2: time.Minute, 3: 5 * time.Minute, 9: 5 * time.Minute} {
		if got := Cooldown(n); got != want {
			t.Errorf("Cooldown(%d) = %v, want %v", n, got, want)
		}
	}
	tests := []struct {
		r    llm.Reason
		n    int
		base time.Duration
		want time.Duration
	}{
		{llm.ReasonBilling, 1, 0, 5 * time.Hour},
		{llm.ReasonBilling, 2, 0, 10 * time.Hour},
		{llm.ReasonBilling, 3, 0, 20 * time.Hour},
		{llm.ReasonBilling, 4, 0, 24 * time.Hour},
		{llm.ReasonBilling, 1, time.Hour, time.Hour},
		{llm.ReasonAuthPermanent, 1, 0, 10 * time.Minute},
		{llm.ReasonAuthPermanent, 3, 0, 40 * time.Minute},
		{llm.ReasonAuthPermanent, 5, 0, 60 * time.Minute},
		{llm.ReasonRateLimit, 1, 0, 0},
	}
	for _, tt := range tests {
		if got := DisabledFor(tt.r, tt.n, tt.base); got != tt.want {
			t.Errorf("DisabledFor(%s, %d, %v) = %v, want %v", tt.r, tt.n, tt.base, got, tt.want)
		}
	}
}

// A session keeps its profile while it works; the file order decides
// otherwise.
func TestSelectStickiness(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	ids := []string{"A", "B", "C"}
	if got := mustSelect(t, s, "m", ids, "B"); got != "B" {
		t.Errorf("preferred B picked %s", got)
	}
	if got := mustSelect(t, s, "m", ids, "gone"); got != "A" {
		t.Errorf("unknown preferred picked %s, want A", got)
	}
	mark(t, s, "B", "m", llm.ReasonAuth)
	if got := mustSelect(t, s, "m", ids, "B"); got != "A" {
		t.Errorf("cooling preferred picked %s, want A", got)
	}
	if got := mustSelect(t, s, "m", ids, "", "A"); got != "C" {
		t.Errorf("with A tried picked %s, want C", got)
	}
	if err := s.MarkGood("anthropic", "B", "m"); err != nil {
		t.Fatal(err)
	}
	if got := mustSelect(t, s, "m", ids, "B"); got != "B" {
		t.Errorf("after MarkGood picked %s, want B", got)
	}
	if lg, _ := s.LastGood("anthropic"); lg != "B" {
		t.Errorf("LastGood = %q", lg)
	}
}

// MarkGood keeps a rate-limit cooldown of another model.
func TestMarkGoodKeepsOtherModelsCooldown(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	mark(t, s, "A", "m1", llm.ReasonRateLimit)
	if err := s.MarkGood("anthropic", "A", "m2"); err != nil {
		t.Fatal(err)
	}
	if got := mustSelect(t, s, "m1", ab, ""); got != "B" {
		t.Errorf("m1 picked %s after a success on m2, want B", got)
	}
}

func TestStatus(t *testing.T) {
	mf, err := llm.ParseModelsFile("models.json", []byte(`{"providers": {
		"zeta": {"baseUrl": "http://x", "api": "openai-completions", "profiles": [{"id": "one", "apiKey": "K1"}], "models": [{"id": "m"}]},
		"anthropic": {"profiles": [{"id": "work", "apiKey": "KEY_A"}, {"id": "spare", "apiKey": "KEY_B"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ids := ProfileIDs(mf, "anthropic"); len(ids) != 2 || ids[0] != "work" {
		t.Errorf("ProfileIDs = %q", ids)
	}
	if ids := ProfileIDs(mf, "openai"); len(ids) != 1 || ids[0] != DefaultProfile {
		t.Errorf("ProfileIDs without profiles = %q", ids)
	}
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	mark(t, s, "spare", "m", llm.ReasonRateLimit)
	s.MarkFailure("openai", DefaultProfile, "gpt", llm.ReasonBilling)
	s.MarkFailure("anthropic", "old", "m", llm.ReasonAuth)
	st, err := s.Status(mf)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		provider, profile, state string
		configured               bool
	}
	want := []row{{"anthropic", "work", StateOK, true}, {"anthropic", "spare", StateCooldown, true}, {"zeta", "one", StateOK, true},
		{"anthropic", "old", StateCooldown, false}, {"openai", "", StateDisabled, true}}
	if len(st) != len(want) {
		t.Fatalf("status = %+v", st)
	}
	for i, w := range want {
		g := st[i]
		if (row{g.Provider, g.Profile, g.State, g.Configured}) != w {
			t.Errorf("status[%d] = %+v, want %+v", i, g, w)
		}
	}
	if st[1].Model != "m" || st[1].Reason != llm.ReasonRateLimit || st[1].ErrorCount != 1 {
		t.Errorf("spare = %+v", st[1])
	}
}

func TestCorruptStateIsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFileName)
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, newClock())
	if got := mustSelect(t, s, "m", ab, ""); got != "A" {
		t.Errorf("picked %s", got)
	}
	mark(t, s, "A", "m", llm.ReasonAuth)
	if got := mustSelect(t, open(t, path, newClock()), "m", ab, ""); got != "B" {
		t.Errorf("after rewriting a corrupt file picked %s, want B", got)
	}
}

// Two processes (this test binary, re-executed) and this one mark the same
// file at once: no update is lost, and each sees the others'.
func TestTwoProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFileName)
	const n = 15
	var cmds []*exec.Cmd
	for _, id := range []string{"P1", "P2"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AUTH_TEST_CHILD=1", "AUTH_TEST_STATE="+path, "AUTH_TEST_PROFILE="+id, "AUTH_TEST_COUNT="+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	c := &testClock{t: time.Unix(1_800_000_000, 0)}
	s := open(t, path, c)
	for range n {
		mark(t, s, "P0", "m", llm.ReasonAuth)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	st, err := s.Status(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 3 {
		t.Fatalf("status = %+v, want 3 profiles", st)
	}
	for _, p := range st {
		if p.ErrorCount != n || p.State != StateCooldown {
			t.Errorf("%s: %d errors (%s), want %d in cooldown: an update was lost", p.Profile, p.ErrorCount, p.State, n)
		}
	}
	if _, err := s.Select("anthropic", "m", []string{"P0", "P1", "P2"}, ""); !errors.Is(err, ErrExhausted) {
		t.Errorf("Select = %v, want every profile cooling", err)
	}
}

func TestWriteStatus(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	mark(t, s, "A", "m1", llm.ReasonRateLimit)
	s.MarkGood("anthropic", "B", "m1")
	st, err := s.Status(nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteStatus(&b, st, c.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"PROVIDER", "anthropic", "A (not in models file)", "cooldown", "rate_limit on m1", "(in 30s)", "B (not in models file)", "ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
}

func TestClear(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), StateFileName), c)
	mark(t, s, "A", "m", llm.ReasonAuth)
	mark(t, s, "B", "m", llm.ReasonAuth)
	s.MarkFailure("openai", DefaultProfile, "m", llm.ReasonAuth)
	if n, err := s.Clear("anthropic", "A", false); n != 1 || err != nil {
		t.Fatalf("Clear A = %d %v", n, err)
	}
	if got := mustSelect(t, s, "m", ab, ""); got != "A" {
		t.Errorf("after clearing A picked %s", got)
	}
	if n, _ := s.Clear("anthropic", "", true); n != 1 {
		t.Errorf("Clear all anthropic cleared %d, want 1 (B)", n)
	}
	if st, _ := s.Status(nil); len(st) != 1 || st[0].Provider != "openai" {
		t.Errorf("status after clearing = %+v", st)
	}
}

// A success on a clean profile does not rewrite the file (the common path
// of every run costs a read, not a synced write).
func TestMarkGoodWritesOnlyChanges(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), StateFileName)
	s := open(t, path, c)
	stat := func() time.Time {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	if err := s.MarkGood("anthropic", "A", "m"); err != nil {
		t.Fatal(err)
	}
	before := stat()
	os.Chtimes(path, before.Add(-time.Hour), before.Add(-time.Hour))
	before = stat()
	c.Advance(time.Minute)
	s.MarkGood("anthropic", "A", "m")
	if !stat().Equal(before) {
		t.Error("a success on a clean profile rewrote the file")
	}
	s.MarkGood("anthropic", "B", "m") // another last good profile: written
	if stat().Equal(before) {
		t.Error("a new last good profile was not written")
	}
	if lg, _ := s.LastGood("anthropic"); lg != "B" {
		t.Errorf("LastGood = %q", lg)
	}
}

// An InMemory store follows the same rules as the file (here: the 401
// cooldown, a rate limit scoped to its model, a billing window) but writes
// nothing, and two stores do not see each other.
func TestInMemoryStore(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AGENTLOOP_HOME", dir)
	c := newClock()
	s, err := Open(&Config{InMemory: true, Clock: clock.At(c.Now), Path: filepath.Join(dir, StateFileName)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != "" {
		t.Errorf("an in-memory store names the file %q", s.Path())
	}
	if p := mark(t, s, "A", "m", llm.ReasonAuth); !p.CooldownUntil.Equal(c.Now().Add(CooldownFirst)) {
		t.Errorf("A after a 401: %+v", p)
	}
	if got := mustSelect(t, s, "m", ab, "A"); got != "B" {
		t.Errorf("after a 401 on A picked %s, want B", got)
	}
	mark(t, s, "B", "m1", llm.ReasonRateLimit)
	if got := mustSelect(t, s, "m2", []string{"B"}, ""); got != "B" {
		t.Errorf("m2 picked %s, want B (the rate limit is m1's)", got)
	}
	if p := mark(t, s, "C", "m", llm.ReasonBilling); !p.DisabledUntil.Equal(c.Now().Add(BillingBase)) {
		t.Errorf("C after a billing failure: %+v, want disabled for %s", p, BillingBase)
	}
	c.Advance(CooldownFirst)
	if got := mustSelect(t, s, "m", []string{"A", "C"}, ""); got != "A" {
		t.Errorf("after A's cooldown picked %s, want A", got)
	}
	other, _ := Open(&Config{InMemory: true, Clock: clock.At(c.Now)})
	if got := mustSelect(t, other, "m", []string{"C"}, ""); got != "C" {
		t.Errorf("a second in-memory store sees the first one's failures: picked %s", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an in-memory store wrote %d files", len(entries))
	}
}
