package failover

import (
	"testing"

	"github.com/agentloop/agentloop/llm"
)

func BenchmarkNext(b *testing.B) {
	b.ReportAllocs()
	f := Failure{Reason: llm.ReasonFormat, Message: `Unsupported value: 'reasoning_effort' does not support 'minimal'. Supported values are: 'low', 'medium', and 'high'.`}
	s := State{AttemptedThinking: []llm.ThinkingLevel{llm.ThinkingMinimal}, FallbackConfigured: true}
	for b.Loop() {
		if p := Next(f, s); p.Step != StepLowerThinking {
			b.Fatal(p)
		}
	}
}
