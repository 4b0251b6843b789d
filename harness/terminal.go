package harness

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Outcome is how a tool call ended.
type Outcome string

// The outcomes.
const (
	OutcomeSuccess Outcome = "success"
	OutcomeFailure Outcome = "failure"
)

// ToolTerminal is a harness's report of one tool call's end.
type ToolTerminal struct {
	CallID string
	// Name is the canonical tool name.
	Name string
	// Args are the arguments that reached the tool.
	Args json.RawMessage
	// ExecutionStarted is false for a call refused before it ran.
	ExecutionStarted bool
	Outcome          Outcome
	// Mutating says the call may change things (not proven read-only).
	Mutating bool
	// Error is the failure's text.
	Error string
}

// ToolResolution is the core's reading after a report.
type ToolResolution struct {
	// LastToolError is the failed mutating call still unresolved, if any.
	LastToolError *ToolTerminal
	// SideEffects says a call that may change things has started.
	SideEffects bool
}

// Tracker keeps the tool terminal bookkeeping of one attempt: a failed
// mutating call's failure stays across later unrelated successes until a
// success of the same tool with the same arguments clears it. Safe for
// concurrent use.
type Tracker struct {
	mu      sync.Mutex
	failed  []ToolTerminal
	acted   bool
	reports int
}

// Observe records one report; it is the shape of
// Attempt.ObserveToolTerminal.
func (t *Tracker) Observe(r ToolTerminal) ToolResolution {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reports++
	if r.ExecutionStarted && r.Mutating {
		t.acted = true
	}
	switch {
	case r.Outcome == OutcomeFailure && r.Mutating:
		t.failed = append(t.failed, r)
	case r.Outcome == OutcomeSuccess:
		kept := t.failed[:0]
		for _, f := range t.failed {
			if !(f.Name == r.Name && sameArgs(f.Args, r.Args)) {
				kept = append(kept, f)
			}
		}
		t.failed = kept
	}
	return t.resolution()
}

// Resolution returns the current reading.
func (t *Tracker) Resolution() ToolResolution {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.resolution()
}

// Reports counts the reports observed.
func (t *Tracker) Reports() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reports
}

func (t *Tracker) resolution() ToolResolution {
	res := ToolResolution{SideEffects: t.acted}
	if n := len(t.failed); n > 0 {
		last := t.failed[n-1]
		res.LastToolError = &last
	}
	return res
}

// sameArgs compares two JSON objects by value (key order and spacing
// aside).
func sameArgs(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}
