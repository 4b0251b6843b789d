package auth

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/llm"
)

// DefaultProfile is the id of a provider's implicit profile: its ordinary
// key (environment or the models file's apiKey), used when the provider
// lists no profiles.
const DefaultProfile = ""

// StateFileName is the state file's name in agentloop's home directory.
const StateFileName = "auth-state.json"

// ErrExhausted is matched (errors.Is) by the error Select returns when no
// profile of a provider is usable: the caller should fail over.
var ErrExhausted = errors.New("no usable auth profile")

// ExhaustedError says that every profile of a provider is cooling down or
// disabled (or was tried already in this run), the strongest reason why,
// and when the first one becomes usable again.
type ExhaustedError struct {
	Provider string
	Model    string
	Reason   llm.Reason
	// Until is the soonest end of a cooldown; zero when the profiles are
	// only excluded because this run tried them.
	Until time.Time
}

// Error names the provider and model, the strongest reason and when a
// profile comes back.
func (e *ExhaustedError) Error() string {
	if e.Until.IsZero() {
		return fmt.Sprintf("every auth profile of %s was tried for %s and failed", e.Provider, e.Model)
	}
	return fmt.Sprintf("every auth profile of %s is unavailable for %s (%s) until %s; wait, add another profile to the models file, or use --fallback with another provider",
		e.Provider, e.Model, e.Reason, e.Until.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

// ProfileIDs lists a provider's auth profiles in the models file's order,
// or just DefaultProfile when it lists none. mf may be nil.
func ProfileIDs(mf *llm.ModelsFile, provider string) []string {
	if pc := mf.Provider(provider); pc != nil && len(pc.Profiles) > 0 {
		ids := make([]string, len(pc.Profiles))
		for i, p := range pc.Profiles {
			ids[i] = p.ID
		}
		return ids
	}
	return []string{DefaultProfile}
}

// DefaultPath returns $AGENTLOOP_HOME/auth-state.json, or
// ~/.agentloop/auth-state.json. getenv nil means os.Getenv.
func DefaultPath(getenv func(string) string) (string, error) {
	models, err := llm.DefaultModelsPath(getenv)
	if err != nil {
		return "", fmt.Errorf("find the auth state file: %w", err)
	}
	return filepath.Join(filepath.Dir(models), StateFileName), nil
}

// Config builds a Store. The zero value uses DefaultPath and the wall
// clock.
type Config struct {
	// Path is the state file; "" means DefaultPath(nil).
	Path string
	// Clock is the time source of cooldowns; nil means clock.Real.
	Clock clock.Clock
	// BillingBackoff overrides the first billing window per provider
	// (it still doubles, up to at least BillingMax).
	BillingBackoff map[string]time.Duration
	// InMemory keeps the state in the Store itself, with no file: the
	// cooldowns count for the users of this Store only, and end with it.
	// Path is then ignored.
	InMemory bool
}

// Store keeps the cooldowns of auth profiles in a state file shared by
// every process of the user. Its methods are safe for concurrent use; each
// one reads the file again, so what another process wrote counts.
type Store struct {
	path    string
	now     func() time.Time
	billing map[string]time.Duration
	mu      sync.Mutex // orders this process's own read-modify-writes
	mem     *stateFile // the state of an InMemory store
}

// Open returns a Store for cfg (nil means defaults). It does not touch the
// file until the first call.
func Open(cfg *Config) (*Store, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	now := clock.Or(c.Clock).Now
	if c.InMemory {
		return &Store{now: now, billing: c.BillingBackoff, mem: newState()}, nil
	}
	if c.Path == "" {
		p, err := DefaultPath(nil)
		if err != nil {
			return nil, err
		}
		c.Path = p
	}
	return &Store{path: c.Path, now: now, billing: c.BillingBackoff}, nil
}

// Path returns the state file's path ("" for an InMemory store).
func (s *Store) Path() string { return s.path }

// neverMarked reports providers whose profiles never keep cooldowns.
func neverMarked(provider string) bool { return provider == "openrouter" }

// MarkFailure records that profile id of provider failed on model with
// reason, and returns the profile's state afterwards (nil when the reason
// or the provider leaves profiles alone). A rate limit cools the profile
// for model only; a second rate limit on another model, or any other
// reason, cools the whole profile. An active cooldown is not moved.
func (s *Store) MarkFailure(provider, id, model string, reason llm.Reason) (*ProfileState, error) {
	if ignored(reason) || neverMarked(provider) {
		return nil, nil
	}
	var out ProfileState
	err := s.update(func(st *stateFile) (bool, error) {
		now := s.now()
		k := key(provider, id)
		p := st.Profiles[k]
		if p == nil {
			p = &ProfileState{}
			st.Profiles[k] = p
		}
		until := p.unusableUntil()
		windowExpired := !p.LastFailure.IsZero() && now.Sub(p.LastFailure) > FailureWindow
		previousExpired := !until.IsZero() && !now.Before(until)
		if windowExpired || previousExpired {
			p.ErrorCount = 0
			p.FailureCounts = nil
		}
		p.ErrorCount++
		if p.FailureCounts == nil {
			p.FailureCounts = map[llm.Reason]int{}
		}
		p.FailureCounts[reason]++
		p.LastFailure = now
		if disables(reason) {
			if !now.Before(p.DisabledUntil) {
				p.DisabledUntil = now.Add(DisabledFor(reason, p.FailureCounts[reason], s.billing[provider]))
				p.DisabledReason = reason
			} else {
				p.DisabledReason = stronger(p.DisabledReason, reason)
			}
		} else {
			active := now.Before(p.CooldownUntil)
			switch {
			case !active:
				p.CooldownUntil = now.Add(Cooldown(p.ErrorCount))
				p.CooldownReason = reason
				p.CooldownModel = ""
				if reason == llm.ReasonRateLimit {
					p.CooldownModel = model
				}
			case reason != llm.ReasonRateLimit || p.CooldownModel != model:
				// Another reason, or a rate limit on a second model:
				// the cooldown now covers the whole profile.
				p.CooldownModel = ""
				p.CooldownReason = stronger(p.CooldownReason, reason)
			}
		}
		out = *p
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// lastUsedResolution is how stale ProfileState.LastUsed may get: a success
// on a clean profile rewrites the file only this often, so the common path
// of a run costs a read, not a synced write.
const lastUsedResolution = time.Hour

// MarkGood records that profile id of provider just worked for model: its
// counters and cooldowns are cleared (except a rate-limit cooldown of
// another model, still running), and it becomes the provider's last good
// profile. On a profile with nothing to clear it writes the file at most
// once an hour (LastUsed).
func (s *Store) MarkGood(provider, id, model string) error {
	return s.update(func(st *stateFile) (bool, error) {
		now := s.now()
		k := key(provider, id)
		p := st.Profiles[k]
		clean := p != nil && p.ErrorCount == 0 && p.CooldownUntil.IsZero() && p.DisabledUntil.IsZero() &&
			now.Sub(p.LastUsed) < lastUsedResolution && !now.Before(p.LastUsed)
		if clean && st.LastGood[provider] == id {
			return false, nil
		}
		if st.LastGood == nil {
			st.LastGood = map[string]string{}
		}
		st.LastGood[provider] = id
		if p == nil {
			p = &ProfileState{}
			st.Profiles[k] = p
		}
		keep := now.Before(p.CooldownUntil) && p.CooldownModel != "" && p.CooldownModel != model
		q := ProfileState{LastUsed: now}
		if keep {
			q.CooldownUntil, q.CooldownReason, q.CooldownModel = p.CooldownUntil, p.CooldownReason, p.CooldownModel
			q.ErrorCount, q.LastFailure = p.ErrorCount, p.LastFailure
		}
		*p = q
		return true, nil
	})
}

// Usable returns the profiles of ids that model may use now, in order,
// leaving out those in exclude (the ones this run tried).
func (s *Store) Usable(provider, model string, ids []string, exclude ...string) ([]string, error) {
	var out []string
	err := s.update(func(st *stateFile) (bool, error) {
		now := s.now()
		for _, id := range ids {
			if slices.Contains(exclude, id) {
				continue
			}
			if b, _, _ := st.Profiles[key(provider, id)].blocked(model, now); !b {
				out = append(out, id)
			}
		}
		return false, nil
	})
	return out, err
}

// Select picks the profile of provider for a call to model, among ids
// (ProfileIDs; empty means DefaultProfile), leaving out those in tried: preferred when it is usable (a
// session keeps its profile while it works), else the first usable one in
// file order. When none is usable it returns an *ExhaustedError
// (errors.Is(err, ErrExhausted)) with the strongest reason and the soonest
// time one comes back.
func (s *Store) Select(provider, model string, ids []string, preferred string, tried ...string) (string, error) {
	var (
		picked string
		found  bool
		ex     = &ExhaustedError{Provider: provider, Model: model}
	)
	if len(ids) == 0 {
		ids = []string{DefaultProfile}
	}
	err := s.update(func(st *stateFile) (bool, error) {
		now := s.now()
		order := ids
		if preferred != "" && slices.Contains(ids, preferred) {
			order = append([]string{preferred}, ids...)
		}
		for _, id := range order {
			if slices.Contains(tried, id) {
				continue
			}
			b, r, until := st.Profiles[key(provider, id)].blocked(model, now)
			if !b {
				picked, found = id, true
				return false, nil
			}
			ex.Reason = stronger(ex.Reason, r)
			if ex.Until.IsZero() || until.Before(ex.Until) {
				ex.Until = until
			}
		}
		return false, nil
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", ex
	}
	return picked, nil
}

// Cooling reports, for a provider none of whose profiles is usable for
// model, the strongest reason and the soonest end of their cooldowns; ok
// is false when some profile is usable. The runner feeds this to
// failover.GateCandidate.
func (s *Store) Cooling(provider, model string, ids []string) (reason llm.Reason, until time.Time, ok bool, err error) {
	_, err = s.Select(provider, model, ids, "")
	var ex *ExhaustedError
	if errors.As(err, &ex) {
		return ex.Reason, ex.Until, true, nil
	}
	return "", time.Time{}, false, err
}

// LastGood returns the profile of provider that last worked ("" when none
// is recorded).
func (s *Store) LastGood(provider string) (string, error) {
	var id string
	err := s.update(func(st *stateFile) (bool, error) {
		id = st.LastGood[provider]
		return false, nil
	})
	return id, err
}

// splitKey undoes key.
func splitKey(k string) (provider, id string) {
	provider, id, _ = strings.Cut(k, "/")
	return provider, id
}

// Clear forgets the failures and cooldowns of profile id of provider, or of
// every profile of provider when all is true (for `agentloop auth reset`).
// It reports how many profiles it cleared.
func (s *Store) Clear(provider, id string, all bool) (int, error) {
	n := 0
	err := s.update(func(st *stateFile) (bool, error) {
		for k := range st.Profiles {
			p, pid := splitKey(k)
			if p == provider && (all || pid == id) {
				delete(st.Profiles, k)
				n++
			}
		}
		return n > 0, nil
	})
	return n, err
}
