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
	// FailedTurnAuto is FailedTurnPlaceholder in Repair, which shapes what
	// is sent (every wire refuses or misreads a call without its result:
	// Chat Completions answers 400 "must be followed by tool messages"),
	// and FailedTurnKeep in RepairPairing called on its own.
	FailedTurnAuto FailedTurnPolicy = iota
	// FailedTurnKeep keeps the real results in call order and never adds
	// synthetic ones: the turn failed, its calls may never have run.
	FailedTurnKeep
	// FailedTurnDrop drops the turn's results.
	FailedTurnDrop
	// FailedTurnPlaceholder keeps the real results and gives each call
	// without one an error result saying "aborted", so the turn can be
	// replayed on every wire.
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
//   - a result that answers no call of the assistant message before it is
//     dropped, counted as a duplicate when an earlier turn had a call with
//     its id and as an orphan otherwise; a second result for one call
//     within a span is dropped too;
//   - a result whose tool name differs from its call's (blank, say) gets
//     the call's name.
//
// Pairing is by position, never by id across the whole history: a result
// answers a call of the assistant message before it (the first unanswered
// one with its id), so a provider that numbers ids per response, reusing
// functions.weather:0 or call_0 in every turn, keeps every pair. The wires
// make ids unique within a request where the provider needs that.
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
		// Results pair with the calls of this message by position: a
		// result answers the first unanswered call of the message with its
		// id, so ids repeated across turns (providers that number them per
		// response) or within the message still pair.
		slot := make([]int, len(calls)) // index in found of call k's result, -1 for none
		for k := range slot {
			slot[k] = -1
		}
		var found []llm.Message
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
			k, ours := -1, false
			for n, c := range calls {
				if c.ID == r.ToolCallID {
					ours = true
					if slot[n] < 0 {
						k = n
						break
					}
				}
			}
			switch {
			case !ours && answered[r.ToolCallID]:
				rep.DroppedDuplicates++
				rep.Changed = true
				continue
			case !ours:
				rep.DroppedOrphans++
				rep.Changed = true
				continue
			case k < 0:
				// A second result for a call of this span.
				rep.Changed = true
				continue
			}
			sawResult = true
			if name := calls[k].Name; name != "" && r.ToolName != name {
				r = r.Clone()
				r.ToolName = name
				rep.Changed = true
			}
			slot[k] = len(found)
			found = append(found, r)
		}
		if sawResult && sawOther {
			rep.Moved = true
		}
		start := len(out)
		if len(m.Content) > 0 {
			out = append(out, m)
		}
		failed := m.StopReason.Failed()
		for k, c := range calls {
			ok := slot[k] >= 0
			switch {
			case ok && failed && policy == FailedTurnDrop:
				rep.Changed = true
				continue
			case ok:
				out = append(out, found[slot[k]])
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

// pairedAlready reports whether RepairPairing would return msgs as they
// are, and the Moved flag it would report, without allocating a copy: the
// common case of a history that was repaired or written in order.
func pairedAlready(msgs []llm.Message, policy FailedTurnPolicy) (ok, moved bool) {
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
			if next < len(results) && results[next].ToolCallID == c.ID {
				if results[next].ToolName != c.Name || failed && policy == FailedTurnDrop {
					return false, false
				}
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
		answered := make([]bool, len(calls))
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == llm.RoleToolResult; j++ {
			id, k, ours := msgs[j].ToolCallID, -1, false
			for n, c := range calls {
				if c.ID == id {
					ours = true
					if !answered[n] {
						k = n
						break
					}
				}
			}
			switch {
			case !ours:
				return fmt.Errorf("%w: a result after message %d answers call %q, which it did not make", ErrUnpaired, i, id)
			case k < 0:
				return fmt.Errorf("%w: call %q in message %d has more than one result", ErrUnpaired, id, i)
			}
			answered[k] = true
		}
		for k, c := range calls {
			if !answered[k] && !m.StopReason.Failed() {
				return fmt.Errorf("%w: call %q (%s) in message %d has no result", ErrUnpaired, c.ID, c.Name, i)
			}
		}
		i = j - 1
	}
	return nil
}
