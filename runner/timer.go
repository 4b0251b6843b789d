package runner

import (
	"context"
	"fmt"
	"sync"
)

// startTimer arms the run timeout; it is extended once when it fires during
// a compaction.
func (s *run) startTimer(cancel context.CancelCauseFunc) (stop func()) {
	d := s.p.Timeout
	if d == 0 {
		d = DefaultRunTimeout
	}
	if d < 0 {
		return func() {}
	}
	grace := s.p.CompactionTimeout
	if grace <= 0 {
		grace = DefaultCompactionTimeout
	}
	var mu sync.Mutex
	graceUsed, stopped := false, false
	var stopFn func() bool
	var fire func()
	fire = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if runTimeoutDuringCompaction(s.compacting.Load(), graceUsed) == timeoutExtend {
			graceUsed = true
			stopFn = s.clock.AfterFunc(grace, fire)
			s.notice(EventTimeoutExtended, Notice{Delay: grace,
				Message: fmt.Sprintf("the run timeout came during a compaction: extended once by %s", roundSec(grace))})
			return
		}
		cancel(ErrRunTimeout)
	}
	mu.Lock()
	stopFn = s.clock.AfterFunc(d, fire)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		stopFn()
	}
}
