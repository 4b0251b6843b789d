package acp

import (
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/llm"
)

// agentloop has no plan tool; what a model writes as a plan is a task
// list in its reply ("- [ ] write the test", "- [x] read the code"), and
// that is what the editor's plan view gets.

// planOf returns the entries of the task list in an assistant message's
// text, nil when it has fewer than two items.
func planOf(m *llm.Message) []sdk.PlanEntry {
	var entries []sdk.PlanEntry
	for _, b := range m.Content {
		if b.Type != llm.ContentText {
			continue
		}
		for line := range strings.SplitSeq(b.Text, "\n") {
			if e, ok := planEntry(line); ok {
				entries = append(entries, e)
			}
		}
	}
	if len(entries) < 2 {
		return nil
	}
	return entries
}

// planEntry reads one task-list line: "- [ ] todo", "* [x] done",
// "1. [~] doing".
func planEntry(line string) (sdk.PlanEntry, bool) {
	s := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(s, "- "), strings.HasPrefix(s, "* "):
		s = s[2:]
	default:
		i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if i <= 0 || !strings.HasPrefix(s[i:], ". ") {
			return sdk.PlanEntry{}, false
		}
		s = s[i+2:]
	}
	if len(s) < 4 || s[0] != '[' || s[2] != ']' || s[3] != ' ' {
		return sdk.PlanEntry{}, false
	}
	var status sdk.PlanEntryStatus
	switch s[1] {
	case ' ':
		status = sdk.PlanEntryStatusPending
	case 'x', 'X':
		status = sdk.PlanEntryStatusCompleted
	case '~', '-':
		status = sdk.PlanEntryStatusInProgress
	default:
		return sdk.PlanEntry{}, false
	}
	content := strings.TrimSpace(s[4:])
	if content == "" {
		return sdk.PlanEntry{}, false
	}
	return sdk.PlanEntry{Content: content, Priority: sdk.PlanEntryPriorityMedium, Status: status}, true
}
