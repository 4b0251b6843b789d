package compact

// Route is what the precheck decides to do before a model call.
type Route string

// The precheck routes.
const (
	// RouteFits: the prompt fits its budget; call the model.
	RouteFits Route = "fits"
	// RouteTruncate: shortening tool results frees enough; no summary.
	RouteTruncate Route = "truncate_tool_results_only"
	// RouteCompactThenTruncate: summarise old history, then shorten tool
	// results if still needed.
	RouteCompactThenTruncate Route = "compact_then_truncate"
	// RouteCompact: there are no tool results to shorten; summarise.
	RouteCompact Route = "compact_only"
)

// Decision is the precheck's finding.
type Decision struct {
	Route Route
	// Estimated is the prompt's token estimate.
	Estimated Estimation
	// PromptBudget is the window minus the reserve.
	PromptBudget int
	// Overflow is how many tokens the estimate exceeds the budget by.
	Overflow int
	// ReducibleChars is what tool-result truncation could remove.
	ReducibleChars int
	// NeedChars is what truncation must remove for the truncation-only
	// route: the overflow in characters plus a margin.
	NeedChars int
}

// Precheck estimates a prompt and chooses its route: fits when the
// estimate is within b.PromptBudget(); otherwise truncation only when tool
// results can give back the overflow (in characters) plus a margin of
// max(2,048 chars, half the overflow); compact only when there is nothing
// to truncate; else compact then truncate.
func Precheck(p Prompt, b Budget) Decision {
	d := Decision{Estimated: Estimate(p), PromptBudget: b.PromptBudget()}
	d.Overflow = max(0, d.Estimated.Tokens-d.PromptBudget)
	if d.Overflow == 0 {
		d.Route = RouteFits
		return d
	}
	d.ReducibleChars = ReductionPotential(p.Messages, MaxToolResultChars(b.Window)).MaxReducible
	d.Route, d.NeedChars = DecideRoute(d.Overflow, d.ReducibleChars)
	return d
}

// DecideRoute is the route rule on its own: overflow tokens against the
// characters tool-result truncation could remove. It also returns the
// characters truncation must remove.
func DecideRoute(overflowTokens, reducibleChars int) (Route, int) {
	if overflowTokens <= 0 {
		return RouteFits, 0
	}
	overflowChars := overflowTokens * CharsPerToken
	need := max(overflowChars+2048, (3*overflowChars+1)/2)
	switch {
	case reducibleChars <= 0:
		return RouteCompact, need
	case reducibleChars >= need:
		return RouteTruncate, need
	}
	return RouteCompactThenTruncate, need
}
