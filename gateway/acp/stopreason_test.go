package acp

import (
	"errors"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
)

// Every way a run ends has its ACP stop reason; the failures are errors
// (the runs behind the first rows are driven over the wire in
// TestStopReasons and the cancel tests).
func TestStopReasonTable(t *testing.T) {
	for _, tc := range []struct {
		res  runner.Result
		want sdk.StopReason
	}{
		{runner.Result{Reason: runner.ReasonStop, StopReason: llm.StopReasonStop}, sdk.StopReasonEndTurn},
		{runner.Result{Reason: runner.ReasonStop, StopReason: llm.StopReasonLength}, sdk.StopReasonMaxTokens},
		{runner.Result{Reason: runner.ReasonMaxTurns}, sdk.StopReasonMaxTurnRequests},
		{runner.Result{Reason: runner.ReasonAborted}, sdk.StopReasonCancelled},
		{runner.Result{Reason: runner.ReasonBudgetTokens}, sdk.StopReasonMaxTokens},
		{runner.Result{Reason: runner.ReasonPromptBlocked, Message: "blocked by a hook"}, sdk.StopReasonRefusal},
		{runner.Result{Reason: runner.ReasonHalted}, sdk.StopReasonRefusal},
		{runner.Result{Reason: runner.ReasonTimeout, Message: "the run took longer than 10m"}, ""},
		{runner.Result{Reason: "overloaded", Err: errors.New("529")}, ""},
	} {
		got, err := stopReason(tc.res)
		if got != tc.want {
			t.Errorf("%s/%s: %q, want %q", tc.res.Reason, tc.res.StopReason, got, tc.want)
		}
		if (err != nil) != (tc.want == "") {
			t.Errorf("%s: error %v", tc.res.Reason, err)
		}
		var re *sdk.RequestError
		if err != nil && (!errors.As(err, &re) || re.Message == "" || re.Data.(map[string]any)["reason"] != tc.res.Reason) {
			t.Errorf("%s: error %#v carries no message and reason", tc.res.Reason, err)
		}
	}
}
