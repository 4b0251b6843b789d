package runner_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/clock"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
)

// One Runner for the program; a run whose first model call is refused as
// overloaded: the runner waits and retries the same model, says so in a
// retry event, and the run succeeds. The events are Go values: the text
// streams as deltas, the run ends with run_end and its Result.
func Example() {
	r, err := runner.New(runner.Config{Clock: instantClock{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	model := faux.New(
		faux.Refuse(llm.ReasonOverloaded, 529, "overloaded"),
		faux.Say("Hello!"),
	)
	run, err := r.Start(context.Background(), runner.Request{Prompt: "say hello", Model: model, Info: model.ModelInfo()})
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range run.Events() {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Type {
		case runner.EventRunStart:
			fmt.Println("on", ev.Start.Model)
		case runner.EventRetry:
			fmt.Println("retry:", ev.Notice.Reason)
		case agent.EventMessageUpdate:
			if ev.Agent.LLM.Type == llm.EventTextDelta {
				fmt.Print(ev.Agent.LLM.Delta)
			}
		case runner.EventRunEnd:
			fmt.Println()
			fmt.Println(ev.End.Reason, ev.End.Attempts, ev.Seq)
		}
	}
	// Output:
	// on faux/faux-1
	// retry: overloaded
	// Hello!
	// stop 2 22
}

// The one-call form: Run waits for the end and returns the Result.
func ExampleRunner_Run() {
	r, err := runner.New(runner.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	res, err := r.Run(context.Background(), runner.Request{Prompt: "hi", Model: faux.New(faux.Say("Hi there."))})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Reason, res.Messages[len(res.Messages)-1].Text())
	// Output:
	// stop Hi there.
}

// instantClock skips the backoff waits, for the example.
type instantClock struct{ clock.Real }

func (instantClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }
