package google_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// Streamed function-call arguments (partialArgs with willContinue)
// assemble into one call per function call: a string continued over
// pieces, numbers, booleans, nested paths and array indexes.
func TestStreamedFunctionCallArguments(t *testing.T) {
	wiretest.Split(t, fixture(t, "tools_partial_args.sse"), nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if got, want := typesString(r.Types), "start text_start text_delta text_end toolcall_start toolcall_delta toolcall_end toolcall_start toolcall_delta toolcall_end done"; got != want {
			t.Errorf("events\n got %s\nwant %s", got, want)
		}
		calls := r.Msg.ToolCalls()
		if len(calls) != 2 || r.Msg.StopReason != llm.StopReasonToolUse {
			t.Fatalf("calls %+v stop %q", calls, r.Msg.StopReason)
		}
		var args map[string]any
		if err := json.Unmarshal(calls[0].Arguments, &args); err != nil {
			t.Fatal(err)
		}
		want := `{"days":3,"hours":[null,"noon"],"location":"San Francisco, CA","options":{"metric":true}}`
		if got, _ := json.Marshal(args); string(got) != want || calls[0].Name != "get_weather" || calls[0].ThoughtSignature != "CiQBSigStreamed" {
			t.Errorf("first call %s %s sig %q, want %s", calls[0].Name, got, calls[0].ThoughtSignature, want)
		}
		if calls[1].Name != "get_time" || string(calls[1].Arguments) != `{"zone":"PST"}` || calls[0].ID == calls[1].ID {
			t.Errorf("second call %+v", calls[1])
		}
	})
}

// A 429 whose QuotaFailure names a per-minute request quota is a rate
// limit with the RetryInfo delay, although its message speaks of plans and
// billing.
func TestPerMinuteQuotaIsRateLimit(t *testing.T) {
	body := `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 38.1s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"10"}]},{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"38s"}]}}`
	srv := serve(t, 429, map[string]string{"Content-Type": "application/json"}, body, nil)
	r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
	wiretest.CheckHTTPError(t, r, wiretest.HTTPError{Status: 429, Reasons: []llm.Reason{llm.ReasonRateLimit}, Body: body,
		Words: "You exceeded your current quota", Retry: 38 * time.Second})

	// A daily quota with the same words stays what the words say.
	daily := `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`
	if got := llm.Classify(429, daily); got != llm.ReasonBilling {
		t.Errorf("daily quota: %s", got)
	}
}

// A chunk of valid JSON in a shape the decoder cannot read (candidates as
// an object) is skipped; the stream finishes as without it.
func TestOddChunkSkipped(t *testing.T) {
	odd := `data: {"candidates": {"0": {"content": {"parts": [{"text": "?"}]}}}}` + "\n\n"
	body := strings.Replace(fixture(t, "text.sse"), "data: ", odd+"data: ", 1)
	wiretest.Split(t, body, nil, func(t *testing.T, srv *httptest.Server) {
		r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
		if r.Err != nil || !strings.HasPrefix(r.Msg.Text(), "Hello") {
			t.Fatalf("err %v text %q", r.Err, r.Msg.Text())
		}
	})
}
