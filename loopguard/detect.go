package loopguard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Level is how serious a detection is.
type Level string

// The levels.
const (
	// LevelWarning lets the call run and shows the model a warning.
	LevelWarning Level = "warning"
	// LevelCritical blocks the call (or, for the global circuit breaker,
	// stops the run).
	LevelCritical Level = "critical"
)

// Detector names the check that fired.
type Detector string

// The detectors, in the order they are checked.
const (
	// DetectorGlobal is the global circuit breaker: any call that has
	// returned the same result (or been blocked) Global times in a row.
	DetectorGlobal Detector = "global_circuit_breaker"
	// DetectorKnownPoll is a polling call whose result does not change.
	DetectorKnownPoll Detector = "known_poll_no_progress"
	// DetectorPingPong is two calls alternating.
	DetectorPingPong Detector = "ping_pong"
	// DetectorGenericRepeat is the same call (tool and arguments) made
	// again and again, whatever its results.
	DetectorGenericRepeat Detector = "generic_repeat"
)

// Detection is the result of checking one call against the history.
type Detection struct {
	// Stuck is false when nothing fired; the other fields are then zero.
	Stuck    bool
	Level    Level
	Detector Detector
	// Count is the number of calls the detector counted, including the
	// call being checked: 10 means "this is the 10th".
	Count int
	// Message is the text shown to the model.
	Message string
	// Key identifies the loop (detector, tool and hashes), for
	// de-duplicating logs.
	Key string
	// PairedTool is, for ping-pong, the other tool of the pair.
	PairedTool string
}

// Record is one remembered call.
type Record struct {
	Tool     string
	ArgsHash string
	CallID   string
	// Outcome is the OutcomeHash of the call's result; empty until the
	// result is recorded.
	Outcome string
	// Blocked marks a call the guard blocked: it counts as a call with no
	// progress.
	Blocked bool
}

func (r *Record) done() bool { return r.Blocked || r.Outcome != "" }

// History is the sliding window of recent calls and the detectors over
// it. It is a plain value without locking; Guard wraps it for concurrent
// use. The zero value is not ready: use NewHistory.
type History struct {
	cfg     Config
	records []Record
}

// NewHistory returns an empty history with cfg (nil means the defaults).
func NewHistory(cfg *Config) *History {
	return &History{cfg: cfg.normalized()}
}

// Records returns a copy of the remembered calls, oldest first.
func (h *History) Records() []Record { return slices.Clone(h.records) }

// Record remembers a call. blocked marks a call the guard refused; it
// gets no outcome later.
func (h *History) Record(callID, name string, args json.RawMessage, blocked bool) {
	h.append(Record{Tool: name, ArgsHash: HashCall(name, args), CallID: callID, Blocked: blocked})
}

func (h *History) record(callID, name, hash string, blocked bool) {
	h.append(Record{Tool: name, ArgsHash: hash, CallID: callID, Blocked: blocked})
}

func (h *History) append(r Record) {
	h.records = append(h.records, r)
	if over := len(h.records) - h.cfg.HistorySize; over > 0 {
		h.records = append(h.records[:0], h.records[over:]...)
	}
}

// RecordOutcome stores the outcome hash of a call's result on the latest
// remembered call with the same tool and arguments (and the same callID,
// when it is not empty) that has none yet. When there is no such call it
// remembers a new one that already has its outcome.
func (h *History) RecordOutcome(callID, name string, args json.RawMessage, outcome string) {
	h.recordOutcome(callID, name, HashCall(name, args), outcome)
}

func (h *History) recordOutcome(callID, name, hash, outcome string) {
	for i := len(h.records) - 1; i >= 0; i-- {
		r := &h.records[i]
		if r.ArgsHash != hash || r.done() || (callID != "" && r.CallID != callID) {
			continue
		}
		r.Outcome = outcome
		return
	}
	h.append(Record{Tool: name, ArgsHash: hash, CallID: callID, Outcome: outcome})
}

// Stats summarises the history.
type Stats struct {
	TotalCalls     int
	UniquePatterns int
	// MostFrequent is the tool and count of the most repeated call
	// (the earliest one on a tie).
	MostFrequentTool  string
	MostFrequentCount int
}

// Stats returns counts over the remembered calls.
func (h *History) Stats() Stats {
	counts := map[string]int{}
	var order []string
	tools := map[string]string{}
	for _, r := range h.records {
		if counts[r.ArgsHash] == 0 {
			order = append(order, r.ArgsHash)
			tools[r.ArgsHash] = r.Tool
		}
		counts[r.ArgsHash]++
	}
	s := Stats{TotalCalls: len(h.records), UniquePatterns: len(counts)}
	for _, k := range order {
		if counts[k] > s.MostFrequentCount {
			s.MostFrequentCount = counts[k]
			s.MostFrequentTool = tools[k]
		}
	}
	return s
}

// Detect checks the call about to be made against the history, before it
// is recorded. The checks run in order and the first that fires wins: the
// global circuit breaker, polling without progress (critical, then
// warning), ping-pong, generic repeat. Every count includes the call being
// checked.
func (h *History) Detect(name string, args json.RawMessage) Detection {
	if h.cfg.Disabled {
		return Detection{}
	}
	return h.detect(name, args, HashCall(name, args))
}

func (h *History) detect(name string, args json.RawMessage, hash string) Detection {
	cfg := &h.cfg
	streak, outcome := h.noProgressStreak(hash)
	count := streak + 1
	if streak > 0 && count >= cfg.Global {
		return Detection{Stuck: true, Level: LevelCritical, Detector: DetectorGlobal, Count: count,
			Key:     "global:" + hash + ":" + outcome,
			Message: fmt.Sprintf("CRITICAL: %s has made no progress %d times in a row: the same arguments gave the same result (or were blocked) each time. The global circuit breaker stopped the run to prevent a runaway loop.", name, count)}
	}
	poll := cfg.KnownPoll(name, args)
	if poll && !cfg.DisableKnownPoll && streak > 0 {
		key := "poll:" + hash + ":" + outcome
		if count >= cfg.Critical {
			return Detection{Stuck: true, Level: LevelCritical, Detector: DetectorKnownPoll, Count: count, Key: key,
				Message: fmt.Sprintf("CRITICAL: call blocked. You have polled %s %d times with identical arguments and no progress; this is a stuck polling loop. Report the task as failed or try a different approach.", name, count)}
		}
		if count >= cfg.Warning {
			return Detection{Stuck: true, Level: LevelWarning, Detector: DetectorKnownPoll, Count: count, Key: key,
				Message: fmt.Sprintf("WARNING: this is poll %d of %s with identical arguments and no progress. Wait longer between checks, or report the task as failed if the process is stuck.", count, name)}
		}
	}
	if !cfg.DisablePingPong {
		if d, ok := h.pingPong(name, hash); ok {
			return d
		}
	}
	if !poll && !cfg.DisableGenericRepeat {
		n := 1
		for _, r := range h.records {
			if r.ArgsHash == hash {
				n++
			}
		}
		key := "generic:" + hash
		if n >= cfg.Critical {
			return Detection{Stuck: true, Level: LevelCritical, Detector: DetectorGenericRepeat, Count: n, Key: key,
				Message: fmt.Sprintf("CRITICAL: call blocked. This would be call %d of %s with identical arguments among the last %d calls; repeating it will not make progress. Change approach, or report the task as failed.", n, name, cfg.HistorySize)}
		}
		if n >= cfg.Warning {
			return Detection{Stuck: true, Level: LevelWarning, Detector: DetectorGenericRepeat, Count: n, Key: key,
				Message: fmt.Sprintf("WARNING: this is call %d of %s with identical arguments. If the repeats are not making progress, stop retrying and report the task as failed.", n, name)}
		}
	}
	return Detection{}
}

// noProgressStreak counts the latest calls with identity hash that gave
// the same outcome as the latest one, scanning back from the newest;
// blocked calls count as no progress and do not break the streak. Calls
// still running (no outcome) are skipped.
func (h *History) noProgressStreak(hash string) (streak int, outcome string) {
	for i := len(h.records) - 1; i >= 0; i-- {
		r := &h.records[i]
		if r.ArgsHash != hash || !r.done() {
			continue
		}
		if r.Blocked {
			streak++
			continue
		}
		if outcome == "" {
			outcome = r.Outcome
		} else if r.Outcome != outcome {
			break
		}
		streak++
	}
	return streak, outcome
}

// pingPong checks whether the newest calls alternate between two
// identities and the call about to be made continues the alternation.
func (h *History) pingPong(name, hash string) (Detection, bool) {
	n := len(h.records)
	if n < 2 {
		return Detection{}, false
	}
	last := h.records[n-1]
	if last.ArgsHash == hash {
		return Detection{}, false
	}
	if h.records[n-2].ArgsHash != hash {
		return Detection{}, false
	}
	tail := 0
	for i := n - 1; i >= 0; i-- {
		want := last.ArgsHash
		if (n-1-i)%2 == 1 {
			want = hash
		}
		if h.records[i].ArgsHash != want {
			break
		}
		tail++
	}
	if tail < 2 {
		return Detection{}, false
	}
	count := tail + 1
	cfg := &h.cfg
	if count < cfg.Warning {
		return Detection{}, false
	}
	pair := []string{last.ArgsHash, hash}
	slices.Sort(pair)
	d := Detection{Stuck: true, Detector: DetectorPingPong, Count: count, PairedTool: last.Tool,
		Key: "pingpong:" + strings.Join(pair, "|")}
	if count >= cfg.Critical && h.tailWithoutProgress(n-tail) {
		d.Level = LevelCritical
		d.Message = fmt.Sprintf("CRITICAL: call blocked. The last %d calls alternate between %s and %s with identical arguments and no progress; this is a stuck ping-pong loop. Report the task as failed or try a different approach.", count, last.Tool, name)
		return d, true
	}
	d.Level = LevelWarning
	d.Message = fmt.Sprintf("WARNING: the last %d calls alternate between %s and %s with identical arguments. This looks like a ping-pong loop; if it is not making progress, stop retrying and report the task as failed.", count, last.Tool, name)
	return d, true
}

// tailWithoutProgress reports whether every call from index start on has
// finished and each identity always gave the same outcome (blocked calls
// excepted).
func (h *History) tailWithoutProgress(start int) bool {
	seen := map[string]string{}
	for _, r := range h.records[start:] {
		if !r.done() {
			return false
		}
		if r.Blocked {
			continue
		}
		if o, ok := seen[r.ArgsHash]; ok && o != r.Outcome {
			return false
		}
		seen[r.ArgsHash] = r.Outcome
	}
	return true
}
