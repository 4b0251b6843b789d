package session

import (
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/llm"
)

// SyntheticResultText is the text of the error result inserted for a tool
// call whose result is missing from the history.
const SyntheticResultText = "[agentloop] no result was recorded for this tool call (the run was interrupted); " +
	"this error result was added when the history was repaired."

// AbortedResultText is the text of the placeholder result given to the
// calls of an aborted or errored turn under FailedTurnPlaceholder.
const AbortedResultText = "aborted"

// FailedTurnPolicy says what pairing repair does with the tool results of
// an assistant turn that ended with an error or was aborted.
type FailedTurnPolicy int

// The policies for failed turns.
const (
	// FailedTurnAuto is FailedTurnPlaceholder for the OpenAI Responses API
	// in Repair and FailedTurnKeep everywhere else.
	FailedTurnAuto FailedTurnPolicy = iota
	// FailedTurnKeep keeps the real results in call order and never adds
	// synthetic ones: the turn failed, its calls may never have run.
	FailedTurnKeep
	// FailedTurnDrop drops the turn's results.
	FailedTurnDrop
	// FailedTurnPlaceholder keeps the real results and gives each call
	// without one an error result saying "aborted", which the OpenAI
	// Responses API needs to replay the turn.
	FailedTurnPlaceholder
)

// PairingOptions tune RepairPairing.
type PairingOptions struct {
	FailedTurns FailedTurnPolicy
	// Now stamps synthetic results (Unix ms); nil means llm.NowMillis.
	Now func() int64
}

// PairingReport says what RepairPairing changed.
type PairingReport struct {
	// Added lists the call ids given a synthetic result.
	Added []string
	// DroppedDuplicates counts results for a call already answered earlier.
	DroppedDuplicates int
	// DroppedOrphans counts results that answer no call of their turn.
	DroppedOrphans int
	// Moved is set when results were moved next to their call.
	Moved bool
	// Changed is set when the output differs from the input.
	Changed bool
}

// RepairPairing makes every tool call have exactly one result right after
// its assistant message, before anything else:
//
//   - results after a call's assistant message but behind other messages
//     (user, ...) are moved up next to it, in call order;
//   - a call without a result gets a synthetic error result
//     (SyntheticResultText), except in a failed turn (see FailedTurnPolicy);
//   - a result for a call that was already answered is a duplicate, and a
//     result outside the span of its call's turn is an orphan: both dropped;
//     a second result for one call within a span is dropped too;
//   - a result whose tool name differs from its call's (blank, say) gets
//     the call's name;
//   - a call whose id was answered in an earlier turn, or repeats within its
//     turn, is removed, since it cannot be answered twice.
//
// It returns msgs itself when nothing changed.
func RepairPairing(msgs []llm.Message, opts PairingOptions) ([]llm.Message, PairingReport) {
	now := opts.Now
	if now == nil {
		now = llm.NowMillis
	}
	policy := opts.FailedTurns
	if policy == FailedTurnAuto {
		policy = FailedTurnKeep
	}
	if ok, moved := pairedAlready(msgs, policy); ok {
		return msgs, PairingReport{Moved: moved}
	}
	return repairPairing(msgs, policy, now)
}

func repairPairing(msgs []llm.Message, policy FailedTurnPolicy, now func() int64) ([]llm.Message, PairingReport) {
	var rep PairingReport
	out := make([]llm.Message, 0, len(msgs)+2)
	answered := map[string]bool{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == llm.RoleToolResult {
			rep.DroppedOrphans++
			rep.Changed = true
			continue
		}
		if m.Role != llm.RoleAssistant {
			out = append(out, m)
			continue
		}
		calls := m.ToolCalls()
		if len(calls) == 0 {
			out = append(out, m)
			continue
		}
		ids := make(map[string]string, len(calls)) // id → name
		for _, c := range calls {
			ids[c.ID] = c.Name
		}
		found := map[string]llm.Message{}
		var remainder []llm.Message
		j := i + 1
		sawResult, sawOther := false, false
		for ; j < len(msgs) && msgs[j].Role != llm.RoleAssistant; j++ {
			r := msgs[j]
			if r.Role != llm.RoleToolResult {
				remainder = append(remainder, r)
				sawOther = true
				continue
			}
			name, ours := ids[r.ToolCallID]
			switch {
			case !ours:
				rep.DroppedOrphans++
				rep.Changed = true
				continue
			case answered[r.ToolCallID]:
				rep.DroppedDuplicates++
				rep.Changed = true
				continue
			}
			if _, dup := found[r.ToolCallID]; dup {
				rep.Changed = true
				continue
			}
			sawResult = true
			if name != "" && r.ToolName != name {
				r = r.Clone()
				r.ToolName = name
				rep.Changed = true
			}
			found[r.ToolCallID] = r
		}
		if sawResult && sawOther {
			rep.Moved = true
		}
		if repeatedCalls(calls, answered) {
			// A call id answered in an earlier turn, or used twice in this
			// one, cannot be answered again: drop the repeat rather than
			// send it unpaired.
			m = withoutRepeats(m, answered)
			calls = m.ToolCalls()
			rep.Changed = true
		}
		start := len(out)
		if len(m.Content) > 0 {
			out = append(out, m)
		}
		failed := m.StopReason.Failed()
		for _, c := range calls {
			r, ok := found[c.ID]
			switch {
			case ok && failed && policy == FailedTurnDrop:
				rep.Changed = true
				continue
			case ok:
				out = append(out, r)
			case failed && policy != FailedTurnPlaceholder:
				continue
			case failed:
				out = append(out, syntheticResult(c, AbortedResultText, now()))
				rep.Added = append(rep.Added, c.ID)
				rep.Changed = true
			default:
				out = append(out, syntheticResult(c, SyntheticResultText, now()))
				rep.Added = append(rep.Added, c.ID)
				rep.Changed = true
			}
			answered[c.ID] = true
		}
		out = append(out, remainder...)
		if !rep.Changed && !sameSpan(out[start:], msgs[i:j]) {
			rep.Changed = true
		}
		i = j - 1
	}
	if !rep.Changed {
		return msgs, rep
	}
	return out, rep
}

// sameSpan reports whether a repaired span holds the same messages in the
// same order as the original.
func sameSpan(got, orig []llm.Message) bool {
	if len(got) != len(orig) {
		return false
	}
	for k := range got {
		if got[k].Role != orig[k].Role || got[k].ToolCallID != orig[k].ToolCallID {
			return false
		}
	}
	return true
}

// repeatedCalls reports whether a call id was answered before or appears
// twice among calls.
func repeatedCalls(calls []llm.Content, answered map[string]bool) bool {
	for i, c := range calls {
		if answered[c.ID] {
			return true
		}
		for _, d := range calls[:i] {
			if d.ID == c.ID {
				return true
			}
		}
	}
	return false
}

// withoutRepeats returns m without the tool calls whose id was answered
// before or was already used earlier in m.
func withoutRepeats(m llm.Message, answered map[string]bool) llm.Message {
	content := make([]llm.Content, 0, len(m.Content))
	seen := map[string]bool{}
	for _, c := range m.Content {
		if c.Type == llm.ContentToolCall {
			if answered[c.ID] || seen[c.ID] {
				continue
			}
			seen[c.ID] = true
		}
		content = append(content, c)
	}
	m.Content = content
	return m
}

// pairedAlready reports whether RepairPairing would return msgs as they
// are, and the Moved flag it would report, without allocating a copy: the
// common case of a history that was repaired or written in order.
func pairedAlready(msgs []llm.Message, policy FailedTurnPolicy) (ok, moved bool) {
	var answered map[string]bool
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		if m.Role == llm.RoleToolResult {
			return false, false // an orphan
		}
		if m.Role != llm.RoleAssistant {
			continue
		}
		// The span: results first, then anything but results, up to the
		// next assistant message.
		j := i + 1
		for j < len(msgs) && msgs[j].Role == llm.RoleToolResult {
			j++
		}
		results := msgs[i+1 : j]
		for ; j < len(msgs) && msgs[j].Role != llm.RoleAssistant; j++ {
			if msgs[j].Role == llm.RoleToolResult {
				return false, false // a displaced result
			}
		}
		sawOther := j > i+1+len(results)
		next := 0 // the next result to match
		calls := 0
		failed := m.StopReason.Failed()
		for k := range m.Content {
			c := &m.Content[k]
			if c.Type != llm.ContentToolCall {
				continue
			}
			calls++
			if answered[c.ID] {
				return false, false
			}
			for _, d := range m.Content[:k] {
				if d.Type == llm.ContentToolCall && d.ID == c.ID {
					return false, false
				}
			}
			if next < len(results) && results[next].ToolCallID == c.ID {
				if results[next].ToolName != c.Name || failed && policy == FailedTurnDrop {
					return false, false
				}
				if answered == nil {
					answered = map[string]bool{}
				}
				answered[c.ID] = true
				next++
				continue
			}
			if !failed || policy == FailedTurnPlaceholder {
				return false, false // a missing result would be added
			}
		}
		if next != len(results) {
			return false, false // results out of order, foreign or repeated
		}
		if calls > 0 && len(results) > 0 && sawOther {
			moved = true
		}
		i = j - 1
	}
	return true, moved
}

func syntheticResult(call llm.Content, text string, ts int64) llm.Message {
	return llm.Message{
		Role:       llm.RoleToolResult,
		ToolCallID: call.ID,
		ToolName:   call.Name,
		Content:    []llm.Content{llm.Text(text)},
		IsError:    true,
		Timestamp:  ts,
	}
}

// ErrUnpaired is matched by the errors of CheckPairing.
var ErrUnpaired = errors.New("tool calls and results are not paired")

// CheckPairing verifies the pairing contract: every tool call of a
// completed assistant message is followed, before the next message of any
// other role, by exactly one result, and every result answers such a call.
// Calls of failed (error or aborted) turns may lack results.
func CheckPairing(msgs []llm.Message) error {
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		if m.Role == llm.RoleToolResult {
			return fmt.Errorf("%w: message %d is a result for call %q that no preceding tool call asked for", ErrUnpaired, i, m.ToolCallID)
		}
		if m.Role != llm.RoleAssistant {
			continue
		}
		calls := m.ToolCalls()
		got := map[string]int{}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == llm.RoleToolResult; j++ {
			got[msgs[j].ToolCallID]++
		}
		want := map[string]bool{}
		for _, c := range calls {
			want[c.ID] = true
			switch n := got[c.ID]; {
			case n == 0 && !m.StopReason.Failed():
				return fmt.Errorf("%w: call %q (%s) in message %d has no result", ErrUnpaired, c.ID, c.Name, i)
			case n > 1:
				return fmt.Errorf("%w: call %q in message %d has %d results", ErrUnpaired, c.ID, i, n)
			}
		}
		for id := range got {
			if !want[id] {
				return fmt.Errorf("%w: a result after message %d answers call %q, which it did not make", ErrUnpaired, i, id)
			}
		}
		i = j - 1
	}
	return nil
}
