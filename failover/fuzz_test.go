package failover

import (
	"slices"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// FuzzPickFallbackThinkingLevel: whatever the error says, the answer is a
// known level that was not attempted, and Next never panics on it.
func FuzzPickFallbackThinkingLevel(f *testing.F) {
	for _, s := range []string{
		`Supported values are: "high", "medium"`,
		`400 think value "low" is not supported for this model`,
		`400 Reasoning is mandatory for this endpoint and cannot be disabled.`,
		"Supported values: 'x-high' and \"max\".\nhigh",
		"must be one of",
		"",
	} {
		f.Add(s, "off")
	}
	f.Fuzz(func(t *testing.T, msg, tried string) {
		attempted := []llm.ThinkingLevel{llm.ThinkingLevel(tried)}
		l, ok := PickFallbackThinkingLevel(msg, attempted)
		if !ok {
			return
		}
		if _, known := llm.ParseThinkingLevel(string(l)); !known {
			t.Fatalf("picked unknown level %q", l)
		}
		if slices.Contains(attempted, l) {
			t.Fatalf("picked %q, already attempted", l)
		}
		Next(Failure{Reason: llm.ReasonFormat, Message: msg}, State{AttemptedThinking: attempted})
	})
}
