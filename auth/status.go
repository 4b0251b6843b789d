package auth

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// The states a profile can be in, for Status.
const (
	StateOK       = "ok"
	StateCooldown = "cooldown"
	StateDisabled = "disabled"
)

// ProfileStatus is one line of `agentloop auth status`.
type ProfileStatus struct {
	Provider string
	// Profile is the profile's id; DefaultProfile ("") for the provider's
	// own key.
	Profile string
	// State is StateOK, StateCooldown or StateDisabled.
	State string
	// Until ends the cooldown or disable window (zero when OK).
	Until time.Time
	// Reason is why the profile is cooling down or disabled.
	Reason llm.Reason
	// Model, when set, is the only model the cooldown applies to.
	Model string
	// ErrorCount counts the failures since the counters last restarted.
	ErrorCount int
	LastUsed   time.Time
	// Configured is false for a profile the state file remembers but the
	// models file no longer lists.
	Configured bool
}

// Status reports every profile the models file lists (in its order,
// providers sorted by name), then those the state file remembers beyond
// them. mf may be nil.
func (s *Store) Status(mf *llm.ModelsFile) ([]ProfileStatus, error) {
	var out []ProfileStatus
	err := s.update(func(st *stateFile) (bool, error) {
		now := s.now()
		seen := map[string]bool{}
		add := func(provider, id string, configured bool) {
			k := key(provider, id)
			seen[k] = true
			ps := ProfileStatus{Provider: provider, Profile: id, State: StateOK, Configured: configured}
			if p := st.Profiles[k]; p != nil {
				ps.ErrorCount, ps.LastUsed = p.ErrorCount, p.LastUsed
				switch {
				case now.Before(p.DisabledUntil):
					ps.State, ps.Until, ps.Reason = StateDisabled, p.DisabledUntil, p.DisabledReason
				case now.Before(p.CooldownUntil):
					ps.State, ps.Until, ps.Reason, ps.Model = StateCooldown, p.CooldownUntil, p.CooldownReason, p.CooldownModel
				}
			}
			out = append(out, ps)
		}
		if mf != nil {
			providers := make([]string, 0, len(mf.Providers))
			for name, pc := range mf.Providers {
				if pc != nil && len(pc.Profiles) > 0 {
					providers = append(providers, name)
				}
			}
			sort.Strings(providers)
			for _, name := range providers {
				for _, pr := range mf.Providers[name].Profiles {
					add(name, pr.ID, true)
				}
			}
		}
		keys := make([]string, 0, len(st.Profiles))
		for k := range st.Profiles {
			if !seen[k] {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			provider, id := splitKey(k)
			configured := id == DefaultProfile // a provider's own key needs no listing
			add(provider, id, configured)
		}
		return false, nil
	})
	return out, err
}

// WriteStatus prints statuses as the table of `agentloop auth status`: one
// line per profile with its provider, state, how long it has left, the
// reason (and the model a rate limit is scoped to) and the error count.
func WriteStatus(w io.Writer, statuses []ProfileStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tPROFILE\tSTATE\tUNTIL\tREASON\tERRORS")
	for _, s := range statuses {
		profile := s.Profile
		if profile == DefaultProfile {
			profile = "(default key)"
		}
		if !s.Configured {
			profile += " (not in models file)"
		}
		until, reason := "-", "-"
		if s.State != StateOK {
			until = fmt.Sprintf("%s (in %s)", s.Until.Local().Format("2006-01-02 15:04:05"), s.Until.Sub(now).Round(time.Second))
			reason = string(s.Reason)
			if s.Model != "" {
				reason += " on " + s.Model
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", s.Provider, profile, s.State, until, reason, s.ErrorCount)
	}
	return tw.Flush()
}
