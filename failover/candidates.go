package failover

import (
	"fmt"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Probe limits of a provider whose every profile is cooling down.
const (
	// ProbeMargin is how long before the soonest cooldown ends a probe may
	// be tried.
	ProbeMargin = 2 * time.Minute
	// MinProbeInterval is the least time between two probes of a provider.
	MinProbeInterval = 30 * time.Second
)

// Gate describes a candidate model whose provider has no usable profile:
// every one is cooling down or disabled.
type Gate struct {
	Provider string
	// Reason is the strongest reason among the profiles' cooldowns.
	Reason llm.Reason
	// Primary is set for the first candidate of the chain; HasFallbacks
	// when others follow it.
	Primary      bool
	HasFallbacks bool
	// Now, the soonest end of the profiles' cooldowns, and the last probe
	// of this provider (zero when never probed).
	Now, SoonestExpiry, LastProbe time.Time
}

// ProbeDue reports whether a provider whose profiles are all cooling down
// may be tried once anyway: within ProbeMargin of the soonest expiry and at
// least MinProbeInterval after the last probe.
func (g Gate) ProbeDue() bool {
	return !g.Now.Before(g.SoonestExpiry.Add(-ProbeMargin)) &&
		(g.LastProbe.IsZero() || g.Now.Sub(g.LastProbe) >= MinProbeInterval)
}

// GateCandidate decides whether a candidate whose provider has no usable
// profile is attempted anyway (as a probe) or skipped, and says why
// (reference §4.2): a provider with an auth problem is skipped with all its
// models; one with a billing problem is probed only as the primary with no
// fallbacks, or when a probe is due; for other reasons the primary is
// probed when a probe is due. Everything else is skipped.
func GateCandidate(g Gate) (try bool, why string) {
	switch g.Reason {
	case llm.ReasonAuth, llm.ReasonAuthPermanent:
		return false, fmt.Sprintf("provider %s has an %s problem on every profile: skipping all its models", g.Provider, g.Reason)
	case llm.ReasonBilling:
		if g.Primary && (!g.HasFallbacks || g.ProbeDue()) {
			return true, fmt.Sprintf("provider %s has a billing problem on every profile: probing once", g.Provider)
		}
		return false, fmt.Sprintf("provider %s has a billing problem on every profile: skipping it", g.Provider)
	}
	if g.Primary && g.ProbeDue() {
		return true, fmt.Sprintf("provider %s is cooling down on every profile: probing once", g.Provider)
	}
	return false, fmt.Sprintf("provider %s is cooling down (no usable profile)", g.Provider)
}
