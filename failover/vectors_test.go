package failover

import (
	"encoding/json"
	"github.com/agentloop/agentloop/internal/vectortest"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// The cases of ../shared/reference/vectors/run_policy.json (OpenClaw's own
// tests, as data) for the failover decision, the retry reason merge, the
// thinking fallback and the iteration cap, read from shared/ beside the
// checkout (AGENTLOOP_VECTORS names another directory). Cooldown cases run
// in package auth; the rest belong to the runner and compaction.

type vector struct {
	Name     string          `json:"name"`
	Function string          `json:"function"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
}

func loadVectors(t *testing.T, file string) []vector {
	t.Helper()
	data := vectortest.Read(t, file)
	var vs []vector
	if err := json.Unmarshal(data, &vs); err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	return vs
}

// skipCase names the cases that encode behaviour we deliberately do not
// copy, with the reason. None so far: every failover case binds us.
var skipCase = map[string]string{}

func TestRunPolicyVectors(t *testing.T) {
	ran := 0
	for _, v := range loadVectors(t, "run_policy.json") {
		var check func(t *testing.T, v vector)
		switch v.Function {
		case "resolveRunFailoverDecision":
			check = checkDecision
		case "mergeRetryFailoverReason":
			check = checkMerge
		case "pickFallbackThinkingLevel":
			check = checkThinking
		case "resolveMaxRunRetryIterations":
			check = checkIterations
		default:
			continue // other rooms' functions
		}
		t.Run(v.Name, func(t *testing.T) {
			if why, ok := skipCase[v.Name]; ok {
				t.Skip(why)
			}
			check(t, v)
		})
		ran++
	}
	if ran < 17 {
		t.Errorf("ran %d failover vectors, want at least 17", ran)
	}
}

func unmarshal(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func reasonOf(p *string) llm.Reason {
	if p == nil {
		return ""
	}
	return llm.Reason(*p)
}

func checkDecision(t *testing.T, v vector) {
	var in struct {
		Stage                    string  `json:"stage"`
		Aborted                  bool    `json:"aborted"`
		ExternalAbort            bool    `json:"externalAbort"`
		FallbackConfigured       bool    `json:"fallbackConfigured"`
		FailoverFailure          bool    `json:"failoverFailure"`
		FailoverReason           *string `json:"failoverReason"`
		TimedOut                 bool    `json:"timedOut"`
		TimedOutDuringCompaction bool    `json:"timedOutDuringCompaction"`
		ProfileRotated           bool    `json:"profileRotated"`
	}
	var want struct {
		Action string  `json:"action"`
		Reason *string `json:"reason"`
	}
	unmarshal(t, v.Input, &in)
	unmarshal(t, v.Expected, &want)
	var stated map[string]json.RawMessage
	unmarshal(t, v.Expected, &stated)
	for k := range stated {
		if k != "action" && k != "reason" {
			t.Fatalf("no adapter for expected.%s", k)
		}
	}
	got := decide(input{
		Stage: stage(in.Stage), Aborted: in.Aborted, ExternalAbort: in.ExternalAbort,
		FallbackConfigured: in.FallbackConfigured, FailoverFailure: in.FailoverFailure,
		Reason: reasonOf(in.FailoverReason), TimedOut: in.TimedOut,
		TimedOutDuringCompaction: in.TimedOutDuringCompaction, ProfileRotated: in.ProfileRotated,
	})
	if string(got.Action) != want.Action {
		t.Errorf("action = %s, want %s", got.Action, want.Action)
	}
	if _, ok := stated["reason"]; ok && got.Reason != reasonOf(want.Reason) { // null: no reason
		t.Errorf("reason = %q, want %q", got.Reason, reasonOf(want.Reason))
	}
}

func checkMerge(t *testing.T, v vector) {
	var in struct {
		Previous       *string `json:"previous"`
		FailoverReason *string `json:"failoverReason"`
		TimedOut       bool    `json:"timedOut"`
	}
	var want *string
	unmarshal(t, v.Input, &in)
	unmarshal(t, v.Expected, &want)
	if got := MergeRetryFailoverReason(reasonOf(in.Previous), reasonOf(in.FailoverReason), in.TimedOut); got != reasonOf(want) {
		t.Errorf("merge = %q, want %q", got, reasonOf(want))
	}
}

func checkThinking(t *testing.T, v vector) {
	var in struct {
		Message   string   `json:"message"`
		Attempted []string `json:"attempted"`
	}
	var want *string
	unmarshal(t, v.Input, &in)
	unmarshal(t, v.Expected, &want)
	var attempted []llm.ThinkingLevel
	for _, a := range in.Attempted {
		attempted = append(attempted, llm.ThinkingLevel(a))
	}
	got, ok := PickFallbackThinkingLevel(in.Message, attempted)
	switch {
	case want == nil && ok:
		t.Errorf("picked %q, want none", got)
	case want != nil && (!ok || string(got) != *want):
		t.Errorf("picked %q (%v), want %q", got, ok, *want)
	}
}

func checkIterations(t *testing.T, v vector) {
	var in struct {
		N int `json:"profileCandidateCount"`
	}
	var want int
	unmarshal(t, v.Input, &in)
	unmarshal(t, v.Expected, &want)
	if got := MaxIterations(in.N); got != want {
		t.Errorf("MaxIterations(%d) = %d, want %d", in.N, got, want)
	}
}
