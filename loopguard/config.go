package loopguard

import "encoding/json"

// Defaults of Config.
const (
	DefaultHistorySize = 30
	DefaultWarning     = 10
	DefaultCritical    = 20
	DefaultGlobal      = 30
)

// Config tunes a Guard. The zero value (or a nil *Config) is the default:
// on, a history of the last 30 calls, warning at the 10th identical call,
// blocking at the 20th, the global circuit breaker at the 30th, every
// detector on.
type Config struct {
	// Disabled turns detection off: Before always allows and nothing is
	// recorded.
	Disabled bool
	// HistorySize is how many recent calls are remembered. A threshold
	// above HistorySize+1 can never be reached.
	HistorySize int
	// Warning, Critical and Global are the thresholds, counted in calls
	// including the one being checked (see the package doc). Values of 0
	// or less mean the defaults. Critical is raised to Warning+1 when it is
	// not above Warning, Global to Critical+1 when it is not above
	// Critical.
	Warning  int
	Critical int
	Global   int
	// DisableGenericRepeat, DisableKnownPoll and DisablePingPong turn one
	// detector off each. The global circuit breaker cannot be turned off
	// except with Disabled.
	DisableGenericRepeat bool
	DisableKnownPoll     bool
	DisablePingPong      bool
	// KnownPoll reports whether a call polls something (so repeating it is
	// normal as long as its result changes). Nil means DefaultKnownPoll.
	KnownPoll func(name string, args json.RawMessage) bool
	// OnEvent, when set, is called for every warning, block and stop,
	// after the guard's lock is released. It must not block for long.
	OnEvent func(Event)
}

// DefaultKnownPoll is the default Config.KnownPoll: the tool command_status,
// and the tool process with action "poll" or "log".
func DefaultKnownPoll(name string, args json.RawMessage) bool { return isKnownPoll(name, args) }

// normalized returns a copy of c with defaults filled in and thresholds
// ordered.
func (c *Config) normalized() Config {
	var n Config
	if c != nil {
		n = *c
	}
	if n.HistorySize <= 0 {
		n.HistorySize = DefaultHistorySize
	}
	if n.Warning <= 0 {
		n.Warning = DefaultWarning
	}
	if n.Critical <= 0 {
		n.Critical = DefaultCritical
	}
	if n.Global <= 0 {
		n.Global = DefaultGlobal
	}
	if n.Critical <= n.Warning {
		n.Critical = n.Warning + 1
	}
	if n.Global <= n.Critical {
		n.Global = n.Critical + 1
	}
	if n.KnownPoll == nil {
		n.KnownPoll = DefaultKnownPoll
	}
	return n
}
