package runner

import (
	"context"
	"iter"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

var (
	// supportedValues finds a provider's list of accepted effort values:
	// `Supported values are: "high", "medium"`.
	supportedValues = regexp.MustCompile(`(?i)supported values(?: are)?\s*:?\s*(.+)`)
	quoted          = regexp.MustCompile(`["'` + "`" + `]([a-zA-Z]+)["'` + "`" + `]`)
	// levelRefused says a thinking level or reasoning setting is refused.
	levelRefused = regexp.MustCompile(`(?i)(think(ing)?|reasoning|effort)[^.]*\bnot supported|unsupported[^.]*(think(ing)?|reasoning|effort)`)
	// reasoningRequired says reasoning cannot be turned off.
	reasoningRequired = regexp.MustCompile(`(?i)reasoning is (mandatory|required)|cannot disable (reasoning|thinking)|(reasoning|thinking)[^.]*cannot be disabled`)
)

// PickFallbackThinkingLevel reads a provider's refusal of a thinking level
// and returns the level to retry with, or "" when the message is not such a
// refusal or every candidate was attempted already:
//
//   - a message listing the supported values gives the first of them not
//     attempted yet;
//   - "reasoning is mandatory" (it cannot be turned off) gives minimal;
//   - any other refusal of the level gives off.
func PickFallbackThinkingLevel(message string, attempted []llm.ThinkingLevel) llm.ThinkingLevel {
	if strings.TrimSpace(message) == "" {
		return ""
	}
	tried := func(l llm.ThinkingLevel) bool { return slices.Contains(attempted, l) }
	if m := supportedValues.FindStringSubmatch(message); m != nil {
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			if l, ok := llm.ParseThinkingLevel(strings.ToLower(q[1])); ok && !tried(l) {
				return l
			}
		}
	}
	switch {
	case reasoningRequired.MatchString(message):
		if !tried(llm.ThinkingMinimal) {
			return llm.ThinkingMinimal
		}
	case levelRefused.MatchString(message):
		if !tried(llm.ThinkingOff) {
			return llm.ThinkingOff
		}
	}
	return ""
}

// attemptModel is the model the agent calls, with what the cascade may
// change between attempts: the model itself (another auth profile) and the
// thinking level (a fallback the provider accepts).
type attemptModel struct {
	mu    sync.Mutex
	model llm.Model
	level llm.ThinkingLevel
}

func (t *attemptModel) setLevel(l llm.ThinkingLevel) {
	t.mu.Lock()
	t.level = l
	t.mu.Unlock()
}

func (t *attemptModel) setModel(m llm.Model) {
	t.mu.Lock()
	t.model = m
	t.mu.Unlock()
}

func (t *attemptModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	t.mu.Lock()
	m, l := t.model, t.level
	t.mu.Unlock()
	if l != "" && req.Options.Thinking != l {
		r := *req
		r.Options.Thinking = l
		req = &r
	}
	return m.Stream(ctx, req)
}
