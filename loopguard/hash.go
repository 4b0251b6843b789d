package loopguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// HashCall returns the identity of a call: the tool name, a colon and the
// lower-case hex SHA-256 of the canonical JSON of its arguments
// (CanonicalJSON). Arguments that are not valid JSON are hashed as given,
// so they still have a stable identity.
func HashCall(name string, args json.RawMessage) string {
	c, err := CanonicalJSON(args)
	if err != nil {
		c = args
	}
	return name + ":" + digest(c)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// isKnownPoll reports whether a call is one of the built-in polling calls:
// command_status, and process with action poll or log.
func isKnownPoll(name string, args json.RawMessage) bool {
	switch name {
	case "command_status":
		return true
	case "process":
		a := processAction(args)
		return a == "poll" || a == "log"
	}
	return false
}

func processAction(args json.RawMessage) string {
	var p struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(args, &p) != nil {
		return ""
	}
	return p.Action
}

// OutcomeHash returns the digest that says whether two results of a call
// are "the same outcome" (no progress). An error result hashes its text
// with an "error:" prefix. For process poll and log calls only the fields
// that show progress count (status, exit code and signal, the aggregated
// output or line and character totals, and the text). Any other result
// hashes its stable details and its text blocks joined by newlines and
// trimmed. Details that differ on every call whatever the outcome (see
// VolatileDetail: bash's durationMs, a spill file's path) are left out,
// or a loop that repeats the same call with the same output would look
// like progress every time.
//
// res must be the tool's own result, before anything (the guard's
// warning, a hook's rewrite) is added to it: Guard.After is called with
// that result.
func OutcomeHash(name string, args json.RawMessage, res tool.Result) string {
	text := resultText(res.Content)
	if res.IsError {
		return "error:" + digest([]byte(text))
	}
	details := stableDetails(decodeObject(res.Details))
	obj := map[string]any{"text": text}
	var fields []string
	if name == "process" {
		switch a := processAction(args); a {
		case "poll":
			obj["action"] = a
			fields = []string{"status", "exitCode", "exitSignal", "aggregated"}
		case "log":
			obj["action"] = a
			fields = []string{"status", "totalLines", "totalChars", "truncated", "exitCode", "exitSignal"}
		}
	}
	if fields != nil {
		if m, ok := details.(map[string]any); ok {
			for _, f := range fields {
				if v, ok := m[f]; ok {
					obj[f] = v
				}
			}
		}
	} else if details != nil {
		obj["details"] = details
	}
	return digest(appendCanonical(nil, obj))
}

// VolatileDetail reports whether a top-level key of a result's details is
// left out of its outcome: fields that measure time (durationMs,
// elapsedMs, startedAt, timestamp, and the like) and fullOutputPath, the
// file a long output is spilled to, named afresh for each call.
func VolatileDetail(key string) bool {
	switch strings.ToLower(key) {
	case "duration", "elapsed", "timestamp", "time", "fulloutputpath":
		return true
	}
	for _, suffix := range []string{"Ms", "At", "Time", "Timestamp", "Duration"} {
		if len(key) > len(suffix) && strings.HasSuffix(key, suffix) {
			return true
		}
	}
	return false
}

// stableDetails drops the volatile keys of a details object.
func stableDetails(details any) any {
	m, ok := details.(map[string]any)
	if !ok {
		return details
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !VolatileDetail(k) {
			out[k] = v
		}
	}
	return out
}

// resultText joins the text blocks of content with newlines and trims the
// result.
func resultText(content []llm.Content) string {
	var b strings.Builder
	n := 0
	for _, c := range content {
		if c.Type != llm.ContentText {
			continue
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Text)
		n++
	}
	return strings.TrimSpace(b.String())
}

func decodeObject(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	return v
}
