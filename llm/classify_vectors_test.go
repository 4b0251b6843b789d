package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentloop/agentloop/internal/vectortest"
	"regexp"
	"slices"
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
	"coerceToFailoverError format error gets 400":                                                  "no reason-to-status mapping (see resolveFailoverStatus): a text-only error keeps no status",
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
func vectorError(raw json.RawMessage) error { return vectorErrorFrom("", raw) }

// vectorErrorFrom is vectorError for a call to provider (OpenClaw's
// context.provider), where the error does not name one itself.
func vectorErrorFrom(provider string, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if provider != "" {
			return NewStreamError(provider, "", s)
		}
		return errors.New(s)
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return errors.New(string(raw))
	}
	if p := str(o["provider"]); p != "" {
		provider = p
	}
	msg := str(o["message"])
	if cause, ok := o["cause"]; ok {
		return fmt.Errorf("%s: %w", msg, vectorErrorFrom(provider, cause))
	}
	if _, ok := o["error"]; ok && msg == "" {
		return NewStreamError(provider, "", string(raw))
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
	return NewHTTPError(provider, "", status, nil, []byte(text))
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
			// Every field the case states is checked below; a field this
			// adapter does not know fails the case rather than pass it.
			for key := range c.Expected {
				if !slices.Contains(failoverKeys[c.Function], key) {
					t.Fatalf("no adapter for expected.%s of %s", key, c.Function)
				}
			}
			switch c.Function {
			case "classifyFailoverReason":
				got := ClassifyFor(provider, 0, text)
				if want, ok := expectedReason(c, "reason"); ok && !sameBucket(want, got) {
					t.Errorf("ClassifyFor(%q, 0, %q) = %s, want %q", provider, text, got, want)
				}
				if not, ok := expectedReason(c, "reasonNot"); ok && sameBucket(not, got) {
					t.Errorf("ClassifyFor(%q) = %s, must not be %q (null: no failover reason)", text, got, not)
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
				var ctx struct{ Provider string }
				_ = json.Unmarshal(c.Input["context"], &ctx)
				err := vectorError(c.Input["error"])
				if ctx.Provider != "" {
					err = vectorErrorFrom(ctx.Provider, c.Input["error"])
				}
				got := ClassifyError(err)
				if want, ok := expectedReason(c, "reason"); ok && !sameBucket(want, got) {
					t.Errorf("ClassifyError(%v) = %s, want %q", err, got, want)
				}
				var pe *ProviderError
				errors.As(err, &pe)
				if raw, ok := c.Expected["status"]; ok {
					var want int
					_ = json.Unmarshal(raw, &want)
					if pe == nil || pe.Status != want {
						t.Errorf("the error of %s carries status %v, want %d", c.Input["error"], pe, want)
					}
				}
				if raw, ok := c.Expected["provider"]; ok {
					if want := str(raw); pe == nil || pe.Provider != want {
						t.Errorf("the error of %s names provider %v, want %q", c.Input["error"], pe, want)
					}
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
				// One text through OpenClaw's three checks: is it a
				// timeout, its reason, is it worth a failover.
				r := ClassifyText(text)
				if raw, ok := c.Expected["isTimeoutErrorMessage"]; ok {
					if want := expectedBool(t, c, "isTimeoutErrorMessage"); (sameBucket("timeout", r) && r.Transient()) != want {
						t.Errorf("ClassifyText(%q) = %s: a transient timeout/network/server reason = %v, want %s", text, r, !want, raw)
					}
				}
				if want, ok := expectedReason(c, "classifyFailoverReason"); ok && !sameBucket(want, r) {
					t.Errorf("ClassifyText(%q) = %s, want %q", text, r, want)
				}
				if _, ok := c.Expected["isFailoverErrorMessage"]; ok {
					if got, want := r != ReasonUnknown && r != ReasonContextOverflow, expectedBool(t, c, "isFailoverErrorMessage"); got != want {
						t.Errorf("ClassifyText(%q) = %s, failover-worthy %v, want %v", text, r, got, want)
					}
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

// failoverKeys lists, per function, the expected fields the adapter checks.
var failoverKeys = map[string][]string{
	"classifyFailoverReason":               {"reason", "reasonNot"},
	"classifyFailoverReasonFromHttpStatus": {"reason"},
	"resolveFailoverReasonFromError":       {"reason"},
	"coerceToFailoverError":                {"reason", "status", "provider"},
	"classifyProviderSpecificError":        {"reason"},
	"isBillingErrorMessage":                {"result"},
	"isAuthErrorMessage":                   {"result"},
	"isAuthPermanentErrorMessage":          {"result"},
	"isCloudCodeAssistFormatError":         {"result"},
	"isTransientHttpError":                 {"result"},
	"isFailoverErrorMessage":               {"result"},
	"isCloudflareOrHtmlErrorPage":          {"result"},
	"timeoutTriple":                        {"isTimeoutErrorMessage", "classifyFailoverReason", "isFailoverErrorMessage"},
	"classifyProviderRuntimeFailureKind":   {"kind", "kindNot"},
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
			for key := range c.Expected {
				want := "result"
				switch c.Function {
				case "classifyFailoverReason":
					want = "reason"
				case "extractObservedOverflowTokenCount":
					want = "tokens"
				}
				if key != want {
					t.Fatalf("no adapter for expected.%s of %s", key, c.Function)
				}
			}
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

// OpenClaw's user-facing texts are not ours: a case is judged from its own
// fields, by meaning. phrases maps each fixed phrase of OpenClaw's texts
// to what ours must say instead (the key phrase in our words, and the
// reason whose generic text it is); text a case states outside these
// phrases (the provider's own words, numbers) must appear as it is.
var phrases = []struct {
	openclaw *regexp.Regexp
	ours     func(m []string) []string
	reason   Reason
}{
	{exact("Context overflow: prompt too large for the model. Try /reset (or /new) to start a fresh session, or use a larger-context model.", "Context overflow"), lit("context window"), ReasonContextOverflow},
	{exact("Reasoning is required for this model endpoint. Use /think minimal (or any non-off level) and try again.", "Reasoning is required"), lit("reasoning"), ""},
	{exact("/think minimal"), lit("thinking level"), ""},
	{exact("Message ordering conflict - please try again. If this persists, use /new to start a fresh session.", "Message ordering conflict"), lit("order of the messages"), ""},
	{exact("⚠️ API provider returned a billing error — your API key has run out of credits or has an insufficient balance. Check your provider's billing dashboard and top up or switch to a different API key."), lit("billing", "credits"), ReasonBilling},
	{exact("⚠️ API rate limit reached. Please try again later."), lit("rate limit"), ReasonRateLimit},
	{exact("rate limit reached"), lit("rate limit"), ""},
	{exact("LLM request timed out."), lit("timed out"), ReasonTimeout},
	{exact("OpenClaw could not write local session data because the disk is full. Free some disk space and try again."), lit("disk is full"), ""},
	{exact("LLM request failed: network connection was interrupted."), lit("network connection"), ReasonNetwork},
	{exact("LLM request failed: proxy or tunnel configuration blocked the provider request."), lit("proxy"), ""},
	{exact("LLM request failed: provider returned an invalid streaming response. Please try again."), lit("malformed streaming response"), ""},
	{regexp.MustCompile(`^LLM error (\S+): (.+)$`), func(m []string) []string { return m[1:] }, ""},
	{regexp.MustCompile(`^⚠️ (.+)$`), func(m []string) []string { return m[1:] }, ""}, // the provider's words, after OpenClaw's marker
}

// exact matches any of texts, whole.
func exact(texts ...string) *regexp.Regexp {
	for i, t := range texts {
		texts[i] = regexp.QuoteMeta(t)
	}
	return regexp.MustCompile(`^(?:` + strings.Join(texts, "|") + `)$`)
}

func lit(s ...string) func([]string) []string { return func([]string) []string { return s } }

// meaning returns what our text must contain for OpenClaw's text s, and
// the reason whose generic text s is ("" when it is none).
func meaning(s string) ([]string, Reason) {
	for _, p := range phrases {
		if m := p.openclaw.FindStringSubmatch(s); m != nil {
			return p.ours(m), p.reason
		}
	}
	return []string{s}, ""
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
			got := ErrorText(NewStreamError(in.Assistant.Provider, "test-model", in.Assistant.ErrorMessage))
			strs := func(key string) []string {
				var one string
				if json.Unmarshal(c.Expected[key], &one) == nil {
					return []string{one}
				}
				var many []string
				if err := json.Unmarshal(c.Expected[key], &many); err != nil {
					t.Fatalf("expected.%s: %v", key, err)
				}
				return many
			}
			checked := 0
			for key := range c.Expected {
				checked++
				switch key {
				case "exact", "derivedExact", "contains":
					for _, s := range strs(key) {
						ours, _ := meaning(s)
						for _, o := range ours {
							if !strings.Contains(got, o) {
								t.Errorf("%s %q: ErrorText(%q) = %q, want it to say %q", key, s, in.Assistant.ErrorMessage, got, o)
							}
						}
					}
				case "notContains":
					for _, s := range strs(key) {
						ours, _ := meaning(s)
						for _, o := range ours {
							if strings.Contains(got, o) {
								t.Errorf("notContains %q: ErrorText(%q) = %q, must not say %q", s, in.Assistant.ErrorMessage, got, o)
							}
						}
					}
				case "notExact":
					for _, s := range strs(key) {
						generic := s
						if _, r := meaning(s); r != "" {
							generic = r.UserMessage() // OpenClaw's generic text for a reason, in ours
						}
						if got == generic || got == s {
							t.Errorf("notExact %q: ErrorText(%q) = %q, the generic text", s, in.Assistant.ErrorMessage, got)
						}
					}
				default:
					t.Fatalf("no adapter for expected.%s", key)
				}
			}
			if checked == 0 {
				t.Fatal("the case states nothing to check")
			}
		})
	}
}
