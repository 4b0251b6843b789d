package session

import (
	"context"

	"github.com/agentloop/agentloop/llm"
)

// RepairOptions configure Repair.
type RepairOptions struct {
	// API is the wire format the history is sent to; it selects the turn
	// validation (Anthropic, Gemini) and the failed-turn policy.
	API llm.API
	// AllowedTools, when not nil, drops calls to tools not offered now.
	AllowedTools []string
	// PreserveSignedThinking keeps turns with signed thinking unchanged or
	// drops them whole (see SanitizeOptions).
	PreserveSignedThinking bool
	// HistoryTurns keeps only the last n user turns; 0 keeps all.
	HistoryTurns int
	// FailedTurns is the policy for the results of failed turns;
	// FailedTurnAuto uses placeholders, so that pairing holds for every
	// stop reason on every wire.
	FailedTurns FailedTurnPolicy
	// Now stamps synthetic results; nil means llm.NowMillis.
	Now func() int64
}

// Repair runs the whole history repair pipeline, in this order:
// SanitizeToolCalls, RepairPairing, LimitHistoryTurns and a second
// RepairPairing (the cut may orphan results), StripToolResultDetails, then
// ValidateGeminiTurns or ValidateAnthropicTurns (followed by a last
// RepairPairing) for those APIs. It never
// changes msgs' elements; the file is not touched.
func Repair(msgs []llm.Message, opts RepairOptions) []llm.Message {
	policy := opts.FailedTurns
	if policy == FailedTurnAuto {
		// An aborted turn (a double Ctrl-C, say) may hold calls that never
		// got results; sent unanswered, Chat Completions refuses the
		// history for good and Anthropic loses the turn's calls.
		policy = FailedTurnPlaceholder
	}
	pairing := PairingOptions{FailedTurns: policy, Now: opts.Now}
	msgs = SanitizeToolCalls(msgs, SanitizeOptions{
		AllowedTools:           opts.AllowedTools,
		PreserveSignedThinking: opts.PreserveSignedThinking,
	})
	msgs, _ = RepairPairing(msgs, pairing)
	if opts.HistoryTurns > 0 {
		msgs = LimitHistoryTurns(msgs, opts.HistoryTurns)
		msgs, _ = RepairPairing(msgs, pairing)
	}
	msgs = StripToolResultDetails(msgs)
	switch opts.API {
	case llm.APIGoogleGenerativeAI:
		msgs = ValidateGeminiTurns(msgs)
	case llm.APIAnthropicMessages:
		msgs = ValidateAnthropicTurns(msgs)
		// Validation may blank a failed thinking turn whose calls only
		// partly ran (its signature allows no partial edit), leaving the
		// results of the calls that ran behind a turn without them, which
		// Anthropic rejects; pairing drops such orphans.
		msgs, _ = RepairPairing(msgs, pairing)
	}
	return msgs
}

// Transform returns Repair with fixed options in the shape of the agent's
// TransformContext hook, which runs it before every model call. It repairs
// through a Repairer, so a history that grew by appends is repaired only
// where it grew.
func Transform(opts RepairOptions) func(ctx context.Context, msgs []llm.Message) ([]llm.Message, error) {
	r := NewRepairer(opts)
	return func(ctx context.Context, msgs []llm.Message) ([]llm.Message, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return r.Repair(msgs), nil
	}
}
