package runner

import (
	"sync"
	"time"

	"github.com/agentloop/agentloop/auth"
)

// profileFailureWindow is how long failures are remembered in memory: a
// profile that failed longer ago than this starts counting again from one.
const profileFailureWindow = 24 * time.Hour

// cooldowns remembers failing auth profiles across the runs of a Runner
// that has no auth.Store (Params.Auth), with package auth's durations.
type cooldowns struct {
	mu sync.Mutex
	m  map[string]*cooldown
}

type cooldown struct {
	failures int
	last     time.Time
	until    time.Time
}

// fail records a failure of profile key at now. A cooldown in force is
// not extended by failures inside it.
func (c *cooldowns) fail(key string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cooldown{}
	}
	cd := c.m[key]
	if cd == nil {
		cd = &cooldown{}
		c.m[key] = cd
	}
	if now.Before(cd.until) {
		cd.last = now
		return cd.until.Sub(now)
	}
	if now.Sub(cd.last) > profileFailureWindow {
		cd.failures = 0
	}
	cd.failures++
	cd.last = now
	d := auth.Cooldown(cd.failures)
	cd.until = now.Add(d)
	return d
}

// good forgets the failures of a profile that worked.
func (c *cooldowns) good(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// resting reports whether a profile is cooling down at now.
func (c *cooldowns) resting(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cd := c.m[key]
	return cd != nil && now.Before(cd.until)
}
