package runner_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
)

// A run whose first model call is refused as overloaded: the runner waits
// and retries the same model, says so in a retry event, and the run
// succeeds.
func ExampleRun() {
	model := faux.New(
		faux.Refuse(llm.ReasonOverloaded, 529, "overloaded"),
		faux.Say("Hello!"),
	)
	r := runner.New(&runner.Config{Clock: instantClock{}})
	res, err := r.Run(context.Background(), runner.Params{
		Prompt: "say hello",
		Model:  model,
		OnEvent: func(ev agent.Event) {
			if ev.Type == runner.EventRetry {
				fmt.Println("retry:", string(ev.Data) != "")
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Reason, res.Attempts, res.Messages[len(res.Messages)-1].Text())
	// Output:
	// retry: true
	// stop 2 Hello!
}

// instantClock skips the backoff waits, for the example.
type instantClock struct{ runner.RealClock }

func (instantClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }
