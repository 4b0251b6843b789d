package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentloop/agentloop/internal/vectortest"
	"strconv"
	"strings"
	"testing"
)

// The reference vectors (OpenClaw's test cases as data) run through a small
// adapter from their shape to our functions. OpenClaw's reasons are fewer
// than ours: its "timeout" covers every transient transport or server
// failure, which we split into timeout, network and server; its null ("not
// a failover reason") is our unknown, or context_overflow for overflow
// texts. Deliberate deviations are skipped by name, with the reason.

type vectorCase struct {
	Name     string                     `json:"name"`
	Function string                     `json:"function"`
	Input    map[string]json.RawMessage `json:"input"`
	Expected map[string]json.RawMessage `json:"expected"`
}

func loadVectors(t *testing.T, file string) []vectorCase {
	t.Helper()
	data := vectortest.Read(t, file)
	var cases []vectorCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	return cases
}

// vectorSkips are the cases we deliberately decide differently.
var vectorSkips = map[string]string{
	"classifyFailoverReason: HTTP 404: session not found":                                          "no session_expired reason: agentloop keeps no provider-side sessions yet (the Responses wire may add one)",
	`resolveFailoverReasonFromError {"status": 410, "message": "session not found"}`:               "no session_expired reason (see above)",
	`resolveFailoverReasonFromError {"message": "HTTP 410: conversation expired"}`:                 "no session_expired reason (see above)",
	`resolveFailoverReasonFromError {"status": 521}`:                                               "every 5xx is a transient server failure for us; OpenClaw leaves a bare Cloudflare 52x unclassified",
	`resolveFailoverReasonFromError {"status": 522}`:                                               "every 5xx is a transient server failure for us (see 521)",
	`resolveFailoverReasonFromError {"status": 524}`:                                               "every 5xx is a transient server failure for us (see 521)",
	"resolveFailoverStatus(rate_limit)":                                                            "we keep the provider's status on the error and have no reason-to-status mapping",
	"resolveFailoverStatus(auth_permanent)":                                                        "no reason-to-status mapping (see above)",
	"resolveFailoverStatus(format)":                                                                "no reason-to-status mapping (see above)",
	"resolveFailoverStatus(model_not_found)":                                                       "no reason-to-status mapping (see above)",
	"resolveFailoverStatus(session_expired)":                                                       "no reason-to-status mapping (see above)",
	`not format: 400 {"type":"error","error":{"type":"invalid_request_error","message":"messages.`: "our classifier reads the 400 in front of the text: a 400 with no other reason is format",
	"codex missing scopes":                                                                         "no openai-codex provider (OAuth scopes) in agentloop",
	"generic codex permission error not scope":                                                     "no openai-codex provider in agentloop",
}

// functionSkips are OpenClaw functions with no counterpart here.
var functionSkips = map[string]string{
	"parseImageSizeError":      "image downscaling on provider limits is not in agentloop yet",
	"parseImageDimensionError": "image downscaling on provider limits is not in agentloop yet",
	"isCompactionFailureError": "compaction failures are the compact package's business, not the classifier's",
}

// sameBucket compares OpenClaw's expected reason with ours.
func sameBucket(expected string, got Reason) bool {
	switch expected {
	case "":
		return got == ReasonUnknown || got == ReasonContextOverflow
	case "timeout":
		return got == ReasonTimeout || got == ReasonNetwork || got == ReasonServer
	}
	return string(got) == expected
}

func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

func expectedReason(c vectorCase, key string) (string, bool) {
	raw, ok := c.Expected[key]
	if !ok {
		return "", false
	}
	if string(raw) == "null" {
		return "", true
	}
	return str(raw), true
}

func expectedBool(t *testing.T, c vectorCase, key string) bool {
	t.Helper()
	var b bool
	if err := json.Unmarshal(c.Expected[key], &b); err != nil {
		t.Fatalf("%s: expected.%s is not a bool: %s", c.Name, key, c.Expected[key])
	}
	return b
}

// vectorError turns OpenClaw's error shape ({status, code, message,
// provider, cause, error}) into a Go error: a leaf becomes a classified
// *ProviderError, a wrapper keeps its cause in the chain.
func vectorError(raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return errors.New(s)
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return errors.New(string(raw))
	}
	msg := str(o["message"])
	if cause, ok := o["cause"]; ok {
		return fmt.Errorf("%s: %w", msg, vectorError(cause))
	}
	if _, ok := o["error"]; ok && msg == "" {
		return NewStreamError(str(o["provider"]), "", string(raw))
	}
	status := 0
	var n float64
	if json.Unmarshal(o["status"], &n) == nil {
		status = int(n)
	}
	text := msg
	if code := str(o["code"]); code != "" {
		text = strings.TrimSpace(code + " " + msg)
	} else if json.Unmarshal(o["code"], &n) == nil && status == 0 {
		status = int(n)
	}
	return NewHTTPError(str(o["provider"]), "", status, nil, []byte(text))
}

func TestFailoverVectors(t *testing.T) {
	for _, c := range loadVectors(t, "failover_classification.json") {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := vectorSkips[c.Name]; ok {
				t.Skip(why)
			}
			if why, ok := functionSkips[c.Function]; ok {
				t.Skip(why)
			}
			text := str(c.Input["text"])
			provider := str(c.Input["provider"])
			switch c.Function {
			case "classifyFailoverReason":
				got := ClassifyFor(provider, 0, text)
				if want, ok := expectedReason(c, "reason"); ok && !sameBucket(want, got) {
					t.Errorf("ClassifyFor(%q, 0, %q) = %s, want %q", provider, text, got, want)
				}
				if not, ok := expectedReason(c, "reasonNot"); ok && sameBucket(not, got) && not != "" {
					t.Errorf("ClassifyFor(%q) = %s, must not be %q", text, got, not)
				}
			case "classifyFailoverReasonFromHttpStatus":
				var status int
				_ = json.Unmarshal(c.Input["status"], &status)
				msg := str(c.Input["message"])
				got := ClassifyFor(provider, status, msg)
				if want, _ := expectedReason(c, "reason"); !sameBucket(want, got) {
					t.Errorf("ClassifyFor(%q, %d, %q) = %s, want %q", provider, status, msg, got, want)
				}
			case "resolveFailoverReasonFromError", "coerceToFailoverError":
				err := vectorError(c.Input["error"])
				got := ClassifyError(err)
				if want, ok := expectedReason(c, "reason"); ok && !sameBucket(want, got) {
					t.Errorf("ClassifyError(%v) = %s, want %q", err, got, want)
				}
			case "classifyProviderSpecificError":
				got := ClassifyText(text)
				if want, _ := expectedReason(c, "reason"); !sameBucket(want, got) {
					t.Errorf("ClassifyText(%q) = %s, want %q", text, got, want)
				}
			case "isBillingErrorMessage":
				if got, want := ClassifyText(text) == ReasonBilling, expectedBool(t, c, "result"); got != want {
					t.Errorf("ClassifyText(%q) is billing = %v, want %v (got %s)", text, got, want, ClassifyText(text))
				}
			case "isAuthErrorMessage":
				r := ClassifyText(text)
				if got, want := r == ReasonAuth || r == ReasonAuthPermanent, expectedBool(t, c, "result"); got != want {
					t.Errorf("ClassifyText(%q) is auth = %v, want %v (got %s)", text, got, want, r)
				}
			case "isAuthPermanentErrorMessage":
				if got, want := ClassifyText(text) == ReasonAuthPermanent, expectedBool(t, c, "result"); got != want {
					t.Errorf("ClassifyText(%q) is auth_permanent = %v, want %v", text, got, want)
				}
			case "isCloudCodeAssistFormatError":
				if got, want := ClassifyText(text) == ReasonFormat, expectedBool(t, c, "result"); got != want {
					t.Errorf("ClassifyText(%q) is format = %v, want %v (got %s)", text, got, want, ClassifyText(text))
				}
			case "isTransientHttpError":
				if got, want := ClassifyText(text).Transient(), expectedBool(t, c, "result"); got != want {
					t.Errorf("ClassifyText(%q).Transient() = %v, want %v (got %s)", text, got, want, ClassifyText(text))
				}
			case "isFailoverErrorMessage":
				r := ClassifyText(text)
				if got, want := r != ReasonUnknown && r != ReasonContextOverflow, expectedBool(t, c, "result"); got != want {
					t.Errorf("ClassifyText(%q) = %s, failover-worthy want %v", text, r, want)
				}
			case "timeoutTriple":
				r := ClassifyText(text)
				if !sameBucket("timeout", r) || !r.Transient() {
					t.Errorf("ClassifyText(%q) = %s, want a transient timeout/network/server reason", text, r)
				}
			case "isCloudflareOrHtmlErrorPage":
				e := NewStreamError("", "", text)
				got := strings.Contains(e.Message, "HTML page")
				if want := expectedBool(t, c, "result"); got != want {
					t.Errorf("NewStreamError(%q).Message = %q; HTML page = %v, want %v", text, e.Message, got, want)
				}
			case "classifyProviderRuntimeFailureKind":
				signal := c.Input["signal"]
				var sig struct{ Provider, Message string }
				if json.Unmarshal(signal, &sig) != nil {
					sig.Message = str(signal)
				}
				got := ClassifyFor(sig.Provider, 0, sig.Message)
				kind, ok := expectedReason(c, "kind")
				if !ok {
					t.Skip("kindNot: OpenClaw's runtime-failure kinds have no counterpart beyond the reason")
				}
				want := map[string][]Reason{
					"auth_scope":     {ReasonAuth},
					"auth_refresh":   {ReasonAuth},
					"proxy":          {ReasonNetwork},
					"dns":            {ReasonNetwork},
					"timeout":        {ReasonTimeout, ReasonNetwork},
					"replay_invalid": {ReasonFormat},
				}[kind]
				if !containsReason(want, got) {
					t.Errorf("ClassifyFor(%q, %q) = %s, want one of %v (kind %s)", sig.Provider, sig.Message, got, want, kind)
				}
			default:
				t.Fatalf("no adapter for function %q", c.Function)
			}
		})
	}
}

func containsReason(rs []Reason, r Reason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func TestOverflowVectors(t *testing.T) {
	for _, c := range loadVectors(t, "context_overflow.json") {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := functionSkips[c.Function]; ok {
				t.Skip(why)
			}
			text := str(c.Input["text"])
			switch c.Function {
			case "isContextOverflowError", "isLikelyContextOverflowError", "matchesProviderContextOverflow":
				if got, want := IsContextOverflow(text), expectedBool(t, c, "result"); got != want {
					t.Errorf("IsContextOverflow(%q) = %v, want %v", text, got, want)
				}
			case "isBillingErrorMessage":
				if got, want := ClassifyText(text) == ReasonBilling, expectedBool(t, c, "result"); got != want {
					t.Errorf("ClassifyText(%q) is billing = %v, want %v", text, got, want)
				}
			case "classifyFailoverReason":
				if want, _ := expectedReason(c, "reason"); !sameBucket(want, ClassifyText(text)) {
					t.Errorf("ClassifyText(%q) = %s, want %q", text, ClassifyText(text), want)
				}
			case "extractObservedOverflowTokenCount":
				n, ok := OverflowTokens(text)
				raw := c.Expected["tokens"]
				if string(raw) == "null" {
					if ok {
						t.Errorf("OverflowTokens(%q) = %d, want none", text, n)
					}
					return
				}
				want, _ := strconv.Atoi(string(raw))
				if !ok || n != want {
					t.Errorf("OverflowTokens(%q) = %d, %v; want %d", text, n, ok, want)
				}
			default:
				t.Fatalf("no adapter for function %q", c.Function)
			}
		})
	}
}

// userTextMeaning says, per case, what our text must say: the reason's key
// phrase in our words (texts are ours, not OpenClaw's; compared by meaning).
var userTextMeaning = map[string]struct{ contains, notContains []string }{
	"anthropic request size exceeds model context window": {contains: []string{"context window"}},
	"kimi model token limit":                              {contains: []string{"context window"}},
	"reasoning required":                                  {contains: []string{"reasoning", "thinking level"}, notContains: []string{"context window"}},
	"role ordering":                                       {contains: []string{"order of the messages", "new session"}},
	"JSON-wrapped role error":                             {contains: []string{"order of the messages"}, notContains: []string{"400"}},
	"raw unclassified JSON payload":                       {contains: []string{"server_error", "Something exploded"}},
	"billing credit balance":                              {contains: []string{"billing", "credits"}},
	"billing insufficient credits":                        {contains: []string{"billing", "credits"}},
	"rate limit friendly":                                 {contains: []string{"rate limit"}},
	"provider-specific rate limit from JSON payload":      {contains: []string{"30 seconds"}},
	"strips leading status from rate limit text":          {contains: []string{"Your quota has been exhausted, try again in 24 hours"}, notContains: []string{"429"}},
	"prefixed HTML rate-limit page falls back":            {contains: []string{"rate limit"}, notContains: []string{"<html", "DOCTYPE"}},
	"empty stream chunks":                                 {contains: []string{"timed out"}},
	"disk space: ENOSPC: no space left on device, write":  {contains: []string{"disk is full"}},
	"socket hang up":                                      {contains: []string{"network connection"}},
	"non-codex permission error not scope":                {contains: []string{"API key"}, notContains: []string{"scopes"}},
	"proxy 407":                                           {contains: []string{"proxy"}},
	"config error mentioning proxy stays actionable":      {contains: []string{`Model-provider request.proxy/request.tls is not yet supported for api "ollama"`}, notContains: []string{"HTTP 407"}},
	"invalid streaming event order":                       {contains: []string{"malformed streaming response"}},
}

func TestUserFacingVectors(t *testing.T) {
	for _, c := range loadVectors(t, "user_facing_errors.json") {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := vectorSkips[c.Name]; ok {
				t.Skip(why)
			}
			var in struct {
				Assistant struct {
					ErrorMessage string `json:"errorMessage"`
					Provider     string `json:"provider"`
				} `json:"assistant"`
			}
			raw, _ := json.Marshal(c.Input)
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatal(err)
			}
			meaning, ok := userTextMeaning[c.Name]
			if !ok {
				t.Fatalf("no expected meaning written for %q", c.Name)
			}
			got := ErrorText(NewStreamError(in.Assistant.Provider, "test-model", in.Assistant.ErrorMessage))
			for _, s := range meaning.contains {
				if !strings.Contains(got, s) {
					t.Errorf("ErrorText(%q) = %q, want it to contain %q", in.Assistant.ErrorMessage, got, s)
				}
			}
			for _, s := range meaning.notContains {
				if strings.Contains(got, s) {
					t.Errorf("ErrorText(%q) = %q, must not contain %q", in.Assistant.ErrorMessage, got, s)
				}
			}
		})
	}
}
