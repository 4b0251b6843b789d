package reply

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SilentToken is the reply a model gives when it has nothing to say to
// the user.
const SilentToken = "NO_REPLY"

func tokenOr(token string) string {
	if token == "" {
		return SilentToken
	}
	return token
}

// IsSilent reports whether text is only the silent token (any case,
// surrounded by optional whitespace). token "" means SilentToken.
func IsSilent(text, token string) bool {
	return strings.EqualFold(strings.TrimSpace(text), tokenOr(token))
}

// StripSilentToken removes a silent token at the end of text when it
// stands alone (after whitespace, '*' or nothing), with the whitespace and
// asterisks before it, and trims the rest: "Done.\n\nNO_REPLY" gives
// "Done.". A token glued to a word ("interject.NO_REPLY") stays.
func StripSilentToken(text, token string) string {
	token = tokenOr(token)
	t := strings.TrimRight(text, " \t\r\n")
	if len(t) < len(token) || !strings.EqualFold(t[len(t)-len(token):], token) {
		return text
	}
	before := t[:len(t)-len(token)]
	rest := strings.TrimRight(before, " \t\r\n*")
	if len(rest) == len(before) && before != "" {
		return text // glued to the word before it
	}
	return strings.TrimSpace(rest)
}

// StartsWithSilentToken reports whether text starts with the silent token
// glued to a letter or digit ("NO_REPLYThe user..."), a model that said
// NO_REPLY and then kept talking.
func StartsWithSilentToken(text, token string) bool {
	token = tokenOr(token)
	t := strings.TrimLeft(text, " \t\r\n")
	if len(t) <= len(token) || !strings.EqualFold(t[:len(token)], token) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(t[len(token):])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// IsSilentPrefix reports whether text (trimmed, upper case) could be the
// start of the silent token while it streams in, so a caller can wait
// before showing it: "NO_", "NO_REP". Bare "NO" counts only for NO_REPLY;
// other tokens need the underscore to be seen.
func IsSilentPrefix(text, token string) bool {
	token = tokenOr(token)
	t := strings.TrimSpace(text)
	if t == "" || t != strings.ToUpper(t) || !strings.HasPrefix(token, t) {
		return false
	}
	return strings.Contains(t, "_") || (token == SilentToken && t == "NO")
}

// Skip reasons of NormalizePayload.
const (
	SkipSilent = "silent"
	SkipEmpty  = "empty"
)

// NormalizePayload prepares a payload for delivery: a silent reply (the
// token alone, or the JSON {"action":"NO_REPLY"}) is skipped unless it
// carries media, which are kept with empty text; a token glued to the
// start or standing at the end is removed; a payload left without text or
// media is skipped. It returns nil and the reason when the payload is
// skipped. token "" means SilentToken.
func NormalizePayload(p Payload, token string) (*Payload, string) {
	token = tokenOr(token)
	hasMedia := len(p.MediaURLs) > 0
	text := strings.TrimSpace(p.Text)
	silent := IsSilent(text, token) || isSilentAction(text, token)
	if !silent && StartsWithSilentToken(text, token) {
		text = strings.TrimSpace(strings.TrimLeft(text, " \t\r\n")[len(token):])
	}
	if !silent {
		if s := StripSilentToken(text, token); s != text {
			text, silent = s, s == ""
		}
	}
	if silent {
		text = ""
	}
	if text == "" && !hasMedia && !p.AudioAsVoice {
		if silent {
			return nil, SkipSilent
		}
		return nil, SkipEmpty
	}
	p.Text = text
	return &p, ""
}

func isSilentAction(text, token string) bool {
	if !strings.HasPrefix(text, "{") {
		return false
	}
	var v map[string]any
	if json.Unmarshal([]byte(text), &v) != nil || len(v) != 1 {
		return false
	}
	a, _ := v["action"].(string)
	return strings.EqualFold(a, token)
}
