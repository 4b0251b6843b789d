package failover

import (
	"slices"
	"strings"

	"github.com/agentloop/agentloop/internal/lazyre"
	"github.com/agentloop/agentloop/llm"
)

var (
	quotedItem = lazyre.New(`['"]([^'"]+)['"]`)
	listItem   = lazyre.New(`[A-Za-z][A-Za-z_-]*`)
	// A setting the model refuses: `think value "low" is not supported`.
	// Like OpenClaw, any "not supported" counts: the retry with thinking
	// off costs one call when the refusal was about something else.
	levelUnsupported = lazyre.New(`(?i)not supported|unsupported (?:value|parameter).{0,40}(?:think|reasoning|effort)|(?:think|thinking|reasoning|effort).{0,60}(?:unsupported|not available|not allowed)`)
	// Reasoning that may not be turned off.
	reasoningMandatory = lazyre.New(`(?i)reasoning is (?:mandatory|required)|requires reasoning|cannot be disabled|thinking (?:is )?(?:mandatory|required)`)
)

// levelAliases maps the words providers (and users) use for effort levels
// to ours. Words that name no level ("none", "auto") are skipped.
var levelAliases = map[string]llm.ThinkingLevel{
	"off": llm.ThinkingOff, "on": llm.ThinkingLow, "enabled": llm.ThinkingLow, "enable": llm.ThinkingLow,
	"min": llm.ThinkingMinimal, "minimal": llm.ThinkingMinimal, "low": llm.ThinkingLow,
	"mid": llm.ThinkingMedium, "med": llm.ThinkingMedium, "medium": llm.ThinkingMedium,
	"high": llm.ThinkingHigh, "highest": llm.ThinkingHigh, "max": llm.ThinkingHigh, "ultra": llm.ThinkingHigh,
	"xhigh": llm.ThinkingXHigh, "x-high": llm.ThinkingXHigh, "x_high": llm.ThinkingXHigh,
}

// PickFallbackThinkingLevel reads an error that says the requested thinking
// level is not accepted and returns the level to try instead, or false when
// the error is not of that kind or every candidate was attempted already:
//
//   - a list of supported values: the first listed level not yet attempted;
//   - reasoning that cannot be turned off: minimal, if not attempted;
//   - a level reported unsupported, with no list: off, if not attempted.
//
// An attempted level "" counts as off: a call that asked for no thinking.
func PickFallbackThinkingLevel(message string, attempted []llm.ThinkingLevel) (llm.ThinkingLevel, bool) {
	if strings.TrimSpace(message) == "" {
		return "", false
	}
	tried := func(l llm.ThinkingLevel) bool {
		return slices.Contains(attempted, l) || l == llm.ThinkingOff && slices.Contains(attempted, "")
	}
	// Cheap keyword checks first: the regular expressions cost tens of
	// microseconds on a long message.
	lower := strings.ToLower(message)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(lower, w) {
				return true
			}
		}
		return false
	}
	if frag, ok := supportedFragment(lower); ok {
		words := listItem.FindAllString(frag, 12)
		if q := quotedItem.FindAllStringSubmatch(frag, 12); len(q) > 0 {
			words = words[:0]
			for _, item := range q {
				words = append(words, strings.TrimSpace(item[1]))
			}
		}
		for _, w := range words {
			if l, ok := levelAliases[w]; ok && !tried(l) {
				return l, true
			}
		}
	}
	if has("mandatory", "required", "requires reasoning", "cannot be disabled") && reasoningMandatory.MatchString(message) {
		if !tried(llm.ThinkingMinimal) {
			return llm.ThinkingMinimal, true
		}
		return "", false
	}
	if has("support", "not available", "not allowed") && levelUnsupported.MatchString(message) && !tried(llm.ThinkingOff) {
		return llm.ThinkingOff, true
	}
	return "", false
}

// listIntros introduce a list of accepted values: `Supported values are:
// "high", "medium"`, `must be one of 'low', 'high'`, `valid values: low`.
var listIntros = []string{"supported values", "valid values", "allowed values", "must be one of", "expected one of"}

// supportedFragment returns the text of a list of accepted values in a
// lower-cased message, up to the end of its sentence or line.
func supportedFragment(lower string) (string, bool) {
	for _, intro := range listIntros {
		i := strings.Index(lower, intro)
		if i < 0 {
			continue
		}
		frag := strings.TrimSpace(lower[i+len(intro):])
		frag = strings.TrimPrefix(frag, "are")
		frag = strings.TrimLeft(frag, ": ")
		if end := strings.IndexAny(frag, ".\n"); end >= 0 {
			frag = frag[:end]
		}
		return frag, frag != ""
	}
	return "", false
}
