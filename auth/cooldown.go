package auth

import (
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Cooldown and disable windows (reference §4.3).
const (
	// CooldownFirst, CooldownSecond and CooldownMax are the cooldowns
	// after one, two, and three or more failures.
	CooldownFirst  = 30 * time.Second
	CooldownSecond = 60 * time.Second
	CooldownMax    = 5 * time.Minute

	// BillingBase and BillingMax bound the window a billing failure
	// disables a profile for.
	BillingBase = 5 * time.Hour
	BillingMax  = 24 * time.Hour
	// AuthPermanentBase and AuthPermanentMax bound the window a revoked
	// key disables a profile for.
	AuthPermanentBase = 10 * time.Minute
	AuthPermanentMax  = 60 * time.Minute

	// FailureWindow is how long failures are remembered: counters restart
	// when the last failure is older.
	FailureWindow = 24 * time.Hour
)

// Cooldown is the cooldown after errorCount failures: 30 s, 60 s, then
// 5 min (calculateAuthProfileCooldownMs).
func Cooldown(errorCount int) time.Duration {
	switch {
	case errorCount <= 1:
		return CooldownFirst
	case errorCount == 2:
		return CooldownSecond
	}
	return CooldownMax
}

// DisabledFor is how long the n-th failure (1-based, within the failure
// window) of a disabling reason keeps a profile out: base × 2^(n−1),
// capped. It returns 0 for reasons that only cool down.
func DisabledFor(r llm.Reason, n int, billingBase time.Duration) time.Duration {
	var base, ceiling time.Duration
	switch r {
	case llm.ReasonBilling:
		base, ceiling = BillingBase, BillingMax
		if billingBase > 0 {
			base = billingBase
			ceiling = max(ceiling, base)
		}
	case llm.ReasonAuthPermanent:
		base, ceiling = AuthPermanentBase, AuthPermanentMax
	default:
		return 0
	}
	d := base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// disables reports whether a reason disables a profile rather than cools
// it down.
func disables(r llm.Reason) bool {
	return r == llm.ReasonBilling || r == llm.ReasonAuthPermanent
}

// ignored reports whether a failure of this reason leaves the profile
// alone: it says nothing about the credential.
func ignored(r llm.Reason) bool {
	switch r {
	case "", llm.ReasonTimeout, llm.ReasonNetwork, llm.ReasonContextOverflow:
		return true
	}
	return false
}

// priority orders reasons for reporting, strongest first (reference §4.3).
var priority = []llm.Reason{llm.ReasonAuthPermanent, llm.ReasonAuth, llm.ReasonBilling, llm.ReasonFormat,
	llm.ReasonModelNotFound, llm.ReasonOverloaded, llm.ReasonTimeout, llm.ReasonRateLimit, llm.ReasonUnknown}

func rank(r llm.Reason) int {
	for i, p := range priority {
		if p == r {
			return i
		}
	}
	return len(priority)
}

// stronger returns the stronger of two reasons ("" loses to anything).
func stronger(a, b llm.Reason) llm.Reason {
	if a == "" {
		return b
	}
	if b == "" || rank(a) <= rank(b) {
		return a
	}
	return b
}
