package runner

import (
	"sync"
	"time"
)

// Auth-profile cooldowns (reference §4.3).
const (
	// ProfileCooldownMax caps the cooldown of a failing profile.
	ProfileCooldownMax = 5 * time.Minute
	// ProfileFailureWindow is how long failures are remembered: a profile
	// that failed longer ago than this starts counting again from one.
	ProfileFailureWindow = 24 * time.Hour
)

// ProfileCooldown is how long a profile rests after its n-th failure in a
// row: 30 s, then 60 s, then 5 minutes.
func ProfileCooldown(failures int) time.Duration {
	switch {
	case failures <= 1:
		return 30 * time.Second
	case failures == 2:
		return 60 * time.Second
	}
	return ProfileCooldownMax
}

// cooldowns remembers failing auth profiles across the runs of a Runner.
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
	if now.Sub(cd.last) > ProfileFailureWindow {
		cd.failures = 0
	}
	cd.failures++
	cd.last = now
	d := ProfileCooldown(cd.failures)
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
