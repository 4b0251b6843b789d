package cluster

import (
	"time"

	"github.com/agentloop/agentloop/clock"
)

// Config holds a node's timings; zero fields take the defaults below.
// SelfFence must be shorter than LeaseTTL and longer than Heartbeat: a
// node stops its runs before another node may take them over.
type Config struct {
	// LeaseTTL is how long a session lease lasts without renewal.
	LeaseTTL time.Duration
	// Heartbeat is how often a node renews all the leases it holds.
	Heartbeat time.Duration
	// SelfFence is how long a node goes without a renewal before it
	// cancels its runs.
	SelfFence time.Duration
	// Poll is how often an idle node looks for runs to claim, commands and
	// events, besides being woken by NOTIFY.
	Poll time.Duration
	// EventRetention is how long a stored event is kept once its run has
	// ended (unless it is among the last EventsKept of its session); a
	// negative value keeps every event.
	EventRetention time.Duration
	// EventsKept is how many of each session's last events are kept
	// whatever their age (at least 1: the last one carries the seq on).
	EventsKept int
	// PruneEvery is how often a node deletes the events past retention.
	PruneEvery time.Duration
	// Clock times heartbeats and the self-fence; nil means clock.Real.
	// Lease expiry is the database's time, the one clock all nodes share.
	Clock clock.Clock
}

// The default timings (next-capabilities §4.2).
const (
	DefaultLeaseTTL  = 15 * time.Second
	DefaultHeartbeat = 5 * time.Second
	DefaultSelfFence = 10 * time.Second
	DefaultPoll      = time.Second

	DefaultEventRetention = time.Hour
	DefaultEventsKept     = 1000
	DefaultPruneEvery     = time.Minute
)

func (c *Config) withDefaults() Config {
	var v Config
	if c != nil {
		v = *c
	}
	if v.LeaseTTL <= 0 {
		v.LeaseTTL = DefaultLeaseTTL
	}
	if v.Heartbeat <= 0 {
		v.Heartbeat = DefaultHeartbeat
	}
	if v.SelfFence <= 0 {
		v.SelfFence = DefaultSelfFence
	}
	if v.Poll <= 0 {
		v.Poll = DefaultPoll
	}
	if v.EventRetention == 0 {
		v.EventRetention = DefaultEventRetention
	}
	if v.EventsKept <= 0 {
		v.EventsKept = DefaultEventsKept
	}
	if v.PruneEvery <= 0 {
		v.PruneEvery = DefaultPruneEvery
	}
	v.Clock = clock.Or(v.Clock)
	return v
}
