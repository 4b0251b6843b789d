package compact

// Budget defaults, in tokens.
const (
	// DefaultReserveTokens is the reserve setting when none is given.
	DefaultReserveTokens = 16_384
	// ReserveFloor is the least reserve the setting is raised to.
	ReserveFloor = 20_000
	// MaxMinPromptBudget caps the share of the window the reserve must
	// leave to the prompt.
	MaxMinPromptBudget = 8_000
	// MaxKeepRecentTokens caps the recent history kept verbatim.
	MaxKeepRecentTokens = 20_000
)

// Budget is how a context window is shared: the reserve left for the reply
// and the precheck's margin, and the recent history kept verbatim when older
// history is summarised.
type Budget struct {
	// Window is the model's context window in tokens.
	Window int
	// Reserve is held back from the prompt.
	Reserve int
	// KeepRecent is how many tokens of the newest history compaction keeps
	// verbatim.
	KeepRecent int
}

// NewBudget returns the budget of a window for a reserve setting (0 means
// DefaultReserveTokens):
//
//	reserve    = min(max(setting, 20,000), window − min(8,000, window/2))
//	keepRecent = min(20,000, window/4)
//
// so every window from 16K to 2M leaves the prompt at least half the
// window or 8,000 tokens, whichever is less.
func NewBudget(window, reserveSetting int) Budget {
	if reserveSetting <= 0 {
		reserveSetting = DefaultReserveTokens
	}
	return Budget{
		Window:     window,
		Reserve:    EffectiveReserve(window, max(reserveSetting, ReserveFloor)),
		KeepRecent: KeepRecentTokens(window),
	}
}

// EffectiveReserve caps a reserve so the prompt keeps
// min(8,000, window/2) tokens (at least 1) of the window.
func EffectiveReserve(window, reserve int) int {
	window = max(1, window)
	minPrompt := min(MaxMinPromptBudget, max(1, window/2))
	return max(0, min(reserve, window-minPrompt))
}

// KeepRecentTokens returns min(20,000, window/4).
func KeepRecentTokens(window int) int {
	return max(0, min(MaxKeepRecentTokens, window/4))
}

// PromptBudget is what the prompt may use: the window minus the reserve,
// at least 1.
func (b Budget) PromptBudget() int {
	return max(1, max(1, b.Window)-b.Reserve)
}
