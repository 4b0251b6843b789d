package llm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzNewHTTPError feeds arbitrary bodies to the classifier: it must never
// panic, always give a known reason, and keep its outputs bounded.
func FuzzNewHTTPError(f *testing.F) {
	for _, c := range classifyCases {
		f.Add(c.status, c.body)
	}
	f.Add(0, `{"error":{"message":"{\"error\":{\"message\":\"{\\\"a\\\":1}\"}}"}}`)
	f.Add(429, `[[[{"error":[]}]]]`)
	f.Add(200, "<html><title>"+strings.Repeat("x", 10000))
	known := map[Reason]bool{ReasonAuth: true, ReasonAuthPermanent: true, ReasonBilling: true, ReasonRateLimit: true,
		ReasonOverloaded: true, ReasonTimeout: true, ReasonContextOverflow: true, ReasonFormat: true,
		ReasonModelNotFound: true, ReasonServer: true, ReasonNetwork: true, ReasonUnknown: true}
	f.Fuzz(func(t *testing.T, status int, body string) {
		e := NewHTTPError("p", "m", status, nil, []byte(body))
		if !known[e.Reason] {
			t.Fatalf("reason %q for %q", e.Reason, body)
		}
		if len(e.Body) > maxBodyKept+len("…") || len(e.Message) > maxMessageKept+len("…") {
			t.Fatalf("unbounded output: body %d, message %d", len(e.Body), len(e.Message))
		}
		if utf8.ValidString(body) && (!utf8.ValidString(e.Message) || !utf8.ValidString(e.Body)) {
			t.Fatalf("valid input gave invalid UTF-8")
		}
		_ = ErrorText(e)
		_, _ = OverflowTokens(body)
	})
}
