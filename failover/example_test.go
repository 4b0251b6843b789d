package failover_test

import (
	"fmt"

	"github.com/agentloop/agentloop/failover"
	"github.com/agentloop/agentloop/llm"
)

// A rate limit on the first of two auth profiles rotates at once; on the
// last profile, with a fallback model configured, the run moves on.
func ExampleNext() {
	err := &llm.ProviderError{Provider: "anthropic", Status: 429, Reason: llm.ReasonRateLimit, Message: "rate limited"}
	p := failover.Next(failover.FailureOf(err), failover.State{ProfilesLeft: 1, FallbackConfigured: true})
	fmt.Println(p.Step, p.Mark)
	p = failover.Next(failover.FailureOf(err), failover.State{RateLimitRotations: 1, FallbackConfigured: true})
	fmt.Println(p.Step)
	// Output:
	// rotate_profile true
	// fallback_model
}
