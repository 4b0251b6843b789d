package llm

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/internal/lazyre"
)

// errorBody is what the classifier reads out of an error body or text.
type errorBody struct {
	message string // the provider's own words
	typ     string // error type: "overloaded_error", Gemini's "RESOURCE_EXHAUSTED", Bedrock's "ThrottlingException"
	code    string // error code when it is not an HTTP status: "insufficient_quota", "1311"
	status  int    // an HTTP status found in the body or in a leading "429 ..." prefix
	html    bool   // the body is an HTML page (a proxy's or a CDN's error page)
	title   string // the HTML page's title
	// retryDelay is a wait the body asks for (Gemini's RetryInfo).
	retryDelay time.Duration
	// shortQuota is set when the body's QuotaFailure names a quota per
	// second, minute or hour (Gemini's GenerateRequestsPerMinute...): a
	// rate limit, whatever the message says of plans and billing.
	shortQuota bool
	// hay is the lower-case text the rules match against.
	hay string
}

// shortQuotaID matches the id of a quota that resets within the hour.
var shortQuotaID = lazyre.New(`Per(?:Second|Minute|Hour)`)

// leadingStatus matches a status at the start of a message: "429 Too Many
// Requests", "HTTP 404: ...", "Error: 521 <!DOCTYPE ...", "status: 402".
var leadingStatus = lazyre.New(`(?i)^(?:error:?\s*)?(http\s*|status(?:\s*code)?\s*:?\s*)?([1-5]\d\d)\b\s*:?\s*`)

// parseErrorBody extracts the message, type, code and status from the
// error shapes providers use:
//
//	{"error": {"message", "type", "code"}}                 OpenAI and compatible servers
//	{"type": "error", "error": {"type", "message"}}        Anthropic
//	{"error": {"code": 429, "message", "status"}}          Gemini (also inside a JSON array)
//	{"message": "..."} / {"__type", "message"}             Bedrock
//	{"error": "..."}                                       Ollama
//	{"code": 1311, "message": "..."}                       z.ai and others
//	{"detail": "..."}                                      FastAPI-style servers
//
// and plain text or an HTML page. A status at the start of a text ("429
// {json}", "HTTP 404: ...") is read and removed.
//
// Only the start of a huge body is read, and only the start of the text is
// matched against the rules: what an error says is said early, and the
// classifier must stay fast on a megabyte HTML page.
func parseErrorBody(body []byte) errorBody {
	if len(body) > maxBodyParsed {
		body = body[:maxBodyParsed]
	}
	b := parseBody(body)
	if len(b.hay) > maxHay {
		b.hay = b.hay[:maxHay]
	}
	return b
}

// Bounds on the work done per error.
const (
	maxBodyParsed = 256 << 10
	maxHTMLRead   = 32 << 10
	maxHay        = 8 << 10
)

func parseBody(body []byte) errorBody {
	var b errorBody
	s := strings.TrimSpace(string(body))
	if m := leadingStatus.FindStringSubmatchIndex(s); m != nil {
		rest := s[m[1]:]
		explicit := m[2] >= 0 // "HTTP" or "status" before the number
		if explicit || rest == "" || startsLikeErrorText(rest) {
			b.status, _ = strconv.Atoi(s[m[4]:m[5]])
			s = rest
		}
	}
	if s == "" {
		return b
	}
	if prefix, rest, ok := prefixedJSON(s); ok {
		// "Codex error: {json}": the body behind a wrapper's prefix.
		inner := parseBody([]byte(rest))
		if inner.message != "" || inner.typ != "" || inner.code != "" {
			if b.status != 0 && inner.status == 0 {
				inner.status = b.status
			}
			inner.hay = strings.ToLower(prefix) + " " + inner.hay
			return inner
		}
	}
	if (s[0] == '{' || s[0] == '[') && json.Valid([]byte(s)) {
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			b.fromJSON(v, 0)
			if b.message == "" && b.typ == "" && b.code == "" {
				b.message = s
			}
			b.hay = strings.ToLower(strings.Join([]string{b.typ, b.code, b.message}, " "))
			return b
		}
	}
	if isHTMLPage(s) {
		b.html = true
		if len(s) > maxHTMLRead {
			s = s[:maxHTMLRead]
		}
		b.title = htmlTitle(s)
		text := stripTags(s)
		b.message = b.title
		b.hay = strings.ToLower(b.title + " " + text)
		return b
	}
	b.message = s
	b.hay = strings.ToLower(s)
	return b
}

// prefixedJSON splits "Codex error: {json}" (a short label, a colon, then
// a JSON object) into the label and the JSON.
func prefixedJSON(s string) (prefix, rest string, ok bool) {
	i := strings.Index(s, ": {")
	if i <= 0 || i > 80 || strings.ContainsAny(s[:i], "{}[]\"\n") {
		return "", "", false
	}
	rest = s[i+2:]
	if !json.Valid([]byte(rest)) {
		return "", "", false
	}
	return s[:i], rest, true
}

// startsLikeErrorText tells a status prefix ("429 Too Many Requests",
// "500: ...", "400 {json}") from a number in prose ("402 items found").
func startsLikeErrorText(rest string) bool {
	c := rest[0]
	return c == '{' || c == '[' || c == '<' || c == '(' || c == ':' || (c >= 'A' && c <= 'Z')
}

// fromJSON fills b from a decoded JSON error; depth bounds the recursion
// into nested and re-encoded errors.
func (b *errorBody) fromJSON(v any, depth int) {
	if depth > 4 {
		return
	}
	switch t := v.(type) {
	case []any:
		for _, el := range t {
			if _, ok := el.(map[string]any); ok {
				b.fromJSON(el, depth+1)
				return
			}
		}
	case map[string]any:
		if e, ok := t["error"]; ok {
			switch ev := e.(type) {
			case string:
				b.message = ev
				b.readFields(t, depth)
				return
			case map[string]any:
				b.readFields(ev, depth)
				if b.typ == "" {
					if typ, ok := t["type"].(string); ok && typ != "error" {
						b.typ = typ
					}
				}
				if b.status == 0 {
					b.setCode(t["status"])
				}
				return
			}
		}
		b.readFields(t, depth)
	}
}

// readFields reads one error object.
func (b *errorBody) readFields(o map[string]any, depth int) {
	if b.message == "" {
		for _, k := range []string{"message", "msg", "error_message", "errorMessage", "detail", "error_description"} {
			if msg := textOf(o[k]); msg != "" {
				b.message = msg
				break
			}
		}
	}
	if b.typ == "" {
		for _, k := range []string{"type", "__type", "name"} {
			if s, ok := o[k].(string); ok && s != "" && s != "error" {
				// Bedrock's __type may carry a namespace: "com.amazon...#ThrottlingException".
				if i := strings.LastIndexByte(s, '#'); i >= 0 {
					s = s[i+1:]
				}
				b.typ = s
				break
			}
		}
	}
	b.setCode(o["code"])
	b.setCode(o["status"])
	// OpenRouter puts the upstream provider's own error in metadata.raw.
	if md, ok := o["metadata"].(map[string]any); ok {
		if raw := textOf(md["raw"]); raw != "" {
			inner := parseErrorBody([]byte(raw))
			if inner.message != "" && !strings.Contains(b.message, inner.message) {
				b.message = strings.TrimSpace(b.message + ": " + inner.message)
			}
		}
	}
	// Gemini: details[] may hold a RetryInfo with retryDelay "32s".
	if details, ok := o["details"].([]any); ok {
		for _, d := range details {
			dm, _ := d.(map[string]any)
			if rd, ok := dm["retryDelay"].(string); ok {
				if dur, err := time.ParseDuration(rd); err == nil && dur > 0 {
					b.retryDelay = dur
				}
			}
			if vs, ok := dm["violations"].([]any); ok {
				for _, v := range vs {
					vm, _ := v.(map[string]any)
					id, _ := vm["quotaId"].(string)
					if shortQuotaID.MatchString(id) {
						b.shortQuota = true
					}
				}
			}
		}
	}
	// A message that is itself an encoded error: read the inner one.
	if m := strings.TrimSpace(b.message); len(m) > 1 && (m[0] == '{' || m[0] == '[') && json.Valid([]byte(m)) {
		var inner any
		if json.Unmarshal([]byte(m), &inner) == nil {
			saved := *b
			b.message = ""
			b.fromJSON(inner, depth+1)
			if b.message == "" {
				*b = saved
			}
		}
	}
}

// setCode files a "code" or "status" value: a number in the HTTP range is
// a status, anything else a code (Gemini's "RESOURCE_EXHAUSTED" status
// string is a code here).
func (b *errorBody) setCode(v any) {
	switch c := v.(type) {
	case float64:
		n := int(c)
		if n >= 100 && n <= 599 && float64(n) == c {
			if b.status == 0 {
				b.status = n
			}
		} else if b.code == "" {
			b.code = strconv.FormatFloat(c, 'f', -1, 64)
		}
	case string:
		if c == "" {
			return
		}
		if n, err := strconv.Atoi(c); err == nil && n >= 100 && n <= 599 {
			if b.status == 0 {
				b.status = n
			}
			return
		}
		switch {
		case b.code == "":
			b.code = c
		case !strings.EqualFold(b.code, c) && b.typ == "":
			b.typ = c
		}
	}
}

// textOf returns a string field, or the "msg"s of a FastAPI-style list.
func textOf(v any) string {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(t)
	case []any:
		var parts []string
		for _, el := range t {
			switch e := el.(type) {
			case string:
				parts = append(parts, e)
			case map[string]any:
				if s, ok := e["msg"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "; ")
	}
	return ""
}

// display is the message a *ProviderError carries: the provider's words,
// prefixed by the error type when the words do not already say it.
func (b errorBody) display() string {
	if b.html {
		if b.title != "" {
			return "the provider answered with an HTML page instead of an API error: " + b.title
		}
		return "the provider answered with an HTML page instead of an API error"
	}
	label := b.typ
	if label == "" && b.code != "" && !isDigits(b.code) {
		label = b.code
	}
	switch {
	case b.message == "":
		return label
	case label == "" || strings.Contains(strings.ToLower(b.message), strings.ToLower(label)):
		return b.message
	default:
		return label + ": " + b.message
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isHTMLPage reports a whole HTML document, not a message that merely
// quotes a doctype.
func isHTMLPage(s string) bool {
	l := strings.ToLower(s)
	return (strings.Contains(l, "<!doctype html") || strings.Contains(l, "<html")) && strings.Contains(l, "</html>")
}

var (
	titleRe = lazyre.New(`(?is)<title[^>]*>(.*?)</title>`)
	tagRe   = lazyre.New(`(?s)<[^>]*>`)
	spaceRe = lazyre.New(`\s+`)
)

func htmlTitle(s string) string {
	if m := titleRe.FindStringSubmatch(s); m != nil {
		return strings.TrimSpace(spaceRe.ReplaceAllString(m[1], " "))
	}
	return ""
}

func stripTags(s string) string {
	return strings.TrimSpace(spaceRe.ReplaceAllString(tagRe.ReplaceAllString(s, " "), " "))
}

// retryHint finds a wait in a provider's words: "Please try again in
// 20s", "try again in 1.5s", "Please retry in 38.17s", "try again in 30
// seconds", "retry after 2 minutes".
var retryHint = lazyre.New(`(?i)(?:try again|retry)\s+(?:in|after)\s+(?:about\s+)?(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b`)

// retryGoDuration matches compact durations: "try again in 7m12s".
var retryGoDuration = lazyre.New(`(?i)(?:try again|retry)\s+(?:in|after)\s+(?:about\s+)?((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)(?:[^a-z]|$)`)

func retryHintFromText(s string) time.Duration {
	if len(s) > maxHay {
		s = s[:maxHay]
	}
	if l := strings.ToLower(s); !strings.Contains(l, "try again") && !strings.Contains(l, "retry") {
		return 0
	}
	if m := retryGoDuration.FindStringSubmatch(s); m != nil {
		if d, err := time.ParseDuration(m[1]); err == nil && d > 0 {
			return d
		}
	}
	m := retryHint.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || n <= 0 {
		return 0
	}
	unit := time.Second
	switch u := strings.ToLower(m[2]); {
	case strings.HasPrefix(u, "ms") || strings.HasPrefix(u, "milli"):
		unit = time.Millisecond
	case strings.HasPrefix(u, "h"):
		unit = time.Hour
	case u == "m" || strings.HasPrefix(u, "min"):
		unit = time.Minute
	}
	return time.Duration(n * float64(unit))
}

// secretRe matches credentials that providers sometimes echo back in error
// messages ("Incorrect API key provided: sk-proj-...").
var secretRe = lazyre.New(`\b(?:sk-[A-Za-z0-9_\-*.]{6,}|sk_[A-Za-z0-9_\-]{10,}|gsk_[A-Za-z0-9]{10,}|AIza[0-9A-Za-z_\-]{20,}|xai-[A-Za-z0-9]{10,}|or-[A-Za-z0-9-]{20,})|(?i:bearer\s+)[A-Za-z0-9._~+/=\-]{8,}`)

// secretHints are the prefixes secretRe looks for, for a cheap pre-check.
var secretHints = []string{"sk-", "sk_", "gsk_", "aiza", "xai-", "or-", "bearer"}

// redact removes credentials from a provider's text.
func redact(s string) string {
	l := strings.ToLower(s)
	found := false
	for _, h := range secretHints {
		if strings.Contains(l, h) {
			found = true
			break
		}
	}
	if !found {
		return s
	}
	return secretRe.ReplaceAllString(s, "[redacted]")
}
