package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentloop/agentloop/internal/atomicfile"
	"github.com/agentloop/agentloop/llm"
)

// stateVersion is the version of the state file's format.
const stateVersion = 1

// stateFile is the JSON of auth-state.json.
type stateFile struct {
	Version int `json:"version"`
	// Profiles are keyed by "provider/id", or "provider" for the
	// provider's own key.
	Profiles map[string]*ProfileState `json:"profiles"`
	// LastGood remembers, per provider, the last profile that worked.
	LastGood map[string]string `json:"lastGood,omitempty"`
	// Windows are the context windows servers were seen to enforce,
	// keyed by "provider/model".
	Windows map[string]*LearnedWindow `json:"windows,omitempty"`
}

// ProfileState is what is remembered of one profile.
type ProfileState struct {
	// ErrorCount counts the failures since the counters last restarted.
	ErrorCount int `json:"errorCount,omitempty"`
	// FailureCounts counts them per reason.
	FailureCounts map[llm.Reason]int `json:"failureCounts,omitempty"`
	LastFailure   time.Time          `json:"lastFailureAt,omitzero"`
	// CooldownUntil ends a cooldown; CooldownModel, when set, limits it to
	// one model (a rate limit).
	CooldownUntil  time.Time  `json:"cooldownUntil,omitzero"`
	CooldownReason llm.Reason `json:"cooldownReason,omitempty"`
	CooldownModel  string     `json:"cooldownModel,omitempty"`
	// DisabledUntil ends a billing or revoked-key window.
	DisabledUntil  time.Time  `json:"disabledUntil,omitzero"`
	DisabledReason llm.Reason `json:"disabledReason,omitempty"`
	// LastUsed is the last recorded success, to the hour.
	LastUsed time.Time `json:"lastUsedAt,omitzero"`
}

// unusableUntil is when the profile's current cooldown or disable window
// ends (zero when it has none).
func (p *ProfileState) unusableUntil() time.Time {
	if p.DisabledUntil.After(p.CooldownUntil) {
		return p.DisabledUntil
	}
	return p.CooldownUntil
}

// blocked reports whether the profile may not be used for model at now,
// and for which reason until when.
func (p *ProfileState) blocked(model string, now time.Time) (bool, llm.Reason, time.Time) {
	if p == nil {
		return false, "", time.Time{}
	}
	if now.Before(p.DisabledUntil) {
		return true, p.DisabledReason, p.DisabledUntil
	}
	if now.Before(p.CooldownUntil) && (p.CooldownModel == "" || p.CooldownModel == model) {
		return true, p.CooldownReason, p.CooldownUntil
	}
	return false, "", time.Time{}
}

// newState is an empty state.
func newState() *stateFile {
	return &stateFile{Version: stateVersion, Profiles: map[string]*ProfileState{}}
}

func key(provider, id string) string {
	if id == "" {
		return provider
	}
	return provider + "/" + id
}

// update locks the state file, reads it, lets f change it, and writes it
// back atomically when f reports a change. f may be called with an empty
// state: a missing or unreadable file holds no cooldowns.
func (s *Store) update(f func(st *stateFile) (changed bool, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		_, err := f(s.mem)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("auth state: create %s: %w", filepath.Dir(s.path), err)
	}
	lf, err := os.OpenFile(s.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("auth state: open lock: %w", err)
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		return fmt.Errorf("auth state: lock %s.lock: %w", s.path, err)
	}
	defer unlockFile(lf)
	st, err := s.read()
	if err != nil {
		return err
	}
	changed, err := f(st)
	if err != nil || !changed {
		return err
	}
	return s.write(st)
}

// read loads the state file. A missing file is an empty state; so is one
// that does not parse (a cache of cooldowns is not worth failing a run
// for: the next write replaces it).
func (s *Store) read() (*stateFile, error) {
	st := newState()
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth state: read %s: %w", s.path, err)
	}
	var got stateFile
	if json.Unmarshal(data, &got) != nil || got.Version > stateVersion {
		return st, nil
	}
	if got.Profiles != nil {
		st.Profiles = got.Profiles
	}
	st.LastGood = got.LastGood
	for k, w := range got.Windows {
		if w != nil && w.Tokens > 0 {
			if st.Windows == nil {
				st.Windows = map[string]*LearnedWindow{}
			}
			st.Windows[k] = w
		}
	}
	for k, p := range st.Profiles {
		if p == nil {
			delete(st.Profiles, k)
		}
	}
	return st, nil
}

// write replaces the state file atomically and durably (internal/atomicfile:
// a temporary file in the same directory, synced, renamed over it, the
// directory synced).
func (s *Store) write(st *stateFile) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("auth state: encode: %w", err)
	}
	if err := atomicfile.Write(s.path, append(data, '\n'), true); err != nil {
		return fmt.Errorf("auth state: write %s: %w", s.path, err)
	}
	return nil
}
