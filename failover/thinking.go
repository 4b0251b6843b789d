package failover

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

var (
	// A list of accepted values: `Supported values are: "high", "medium"`,
	// `must be one of 'low', 'high'`, `valid values: low, medium`.
	supportedList = regexp.MustCompile(`(?i)(?:supported values(?: are)?|valid values(?: are)?|must be one of|expected one of|allowed values(?: are)?)\s*:?\s*(.+)`)
	listItem      = regexp.MustCompile(`[A-Za-z]+`)
	// A level the model refuses: `think value "low" is not supported`,
	// `reasoning_effort 'minimal' is not supported with this model`.
	levelUnsupported = regexp.MustCompile(`(?i)(?:think|thinking|reasoning|effort|budget).{0,60}(?:not supported|unsupported|not available|is invalid|not allowed)|(?:unsupported|invalid).{0,20}(?:think|thinking|reasoning|effort)`)
	// Reasoning that may not be turned off.
	reasoningMandatory = regexp.MustCompile(`(?i)reasoning is (?:mandatory|required)|requires reasoning|cannot be disabled|thinking (?:is )?(?:mandatory|required)`)
)

// levelAliases maps the words providers use for effort levels to ours.
var levelAliases = map[string]llm.ThinkingLevel{
	"none": llm.ThinkingOff, "disabled": llm.ThinkingOff, "off": llm.ThinkingOff,
	"minimal": llm.ThinkingMinimal, "low": llm.ThinkingLow, "medium": llm.ThinkingMedium,
	"high": llm.ThinkingHigh, "xhigh": llm.ThinkingXHigh, "max": llm.ThinkingXHigh,
}

// PickFallbackThinkingLevel reads an error that says the requested thinking
// level is not accepted and returns the level to try instead, or false when
// the error is not of that kind or every candidate was attempted already:
//
//   - a list of supported values: the first listed level not yet attempted;
//   - reasoning that cannot be turned off: minimal, if not attempted;
//   - a level reported unsupported, with no list: off, if not attempted.
func PickFallbackThinkingLevel(message string, attempted []llm.ThinkingLevel) (llm.ThinkingLevel, bool) {
	if strings.TrimSpace(message) == "" {
		return "", false
	}
	tried := func(l llm.ThinkingLevel) bool { return slices.Contains(attempted, l) }
	if m := supportedList.FindStringSubmatch(message); m != nil {
		for _, w := range listItem.FindAllString(m[1], 12) {
			if l, ok := levelAliases[strings.ToLower(w)]; ok && !tried(l) {
				return l, true
			}
		}
	}
	if reasoningMandatory.MatchString(message) {
		if !tried(llm.ThinkingMinimal) {
			return llm.ThinkingMinimal, true
		}
		return "", false
	}
	if levelUnsupported.MatchString(message) && !tried(llm.ThinkingOff) {
		return llm.ThinkingOff, true
	}
	return "", false
}
