package runner

import (
	"context"
	"strings"
	"sync"
)

// Global lanes.
const (
	LaneMain     = "main"
	LaneSubagent = "subagent"
	LaneCron     = "cron"
	LaneNested   = "nested"
)

// DefaultLaneCaps are the global lanes' concurrency caps. A lane not
// listed runs one run at a time.
var DefaultLaneCaps = map[string]int{LaneMain: 4, LaneSubagent: 8, LaneCron: 1, LaneNested: 1}

// sessionLanePrefix starts the name of a session's lane.
const sessionLanePrefix = "session:"

// resolveSessionLane names the lane of a session key: the trimmed key with
// the "session:" prefix (added once); an empty key is "main".
func resolveSessionLane(key string) string {
	key = strings.TrimSpace(key)
	if key == "" {
		key = LaneMain
	}
	if strings.HasPrefix(key, sessionLanePrefix) {
		return key
	}
	return sessionLanePrefix + key
}

// resolveGlobalLane names the global lane of a run: the trimmed lane, main
// when empty.
func resolveGlobalLane(lane string) string {
	lane = strings.TrimSpace(lane)
	if lane == "" {
		return LaneMain
	}
	return lane
}

// resolveNestedLane names the lane of a run started from inside a run on
// parent: the parent's own lane, except that an unnamed parent and a cron
// parent give nested (the cron lane's one slot is the parent's: a child
// there would wait for it forever).
func resolveNestedLane(parent string) string {
	parent = strings.TrimSpace(parent)
	if parent == "" || parent == LaneCron {
		return LaneNested
	}
	return parent
}

// lanes queues runs: first per session (one run at a time, in arrival
// order), then per global lane (up to its cap, in arrival order). It is safe
// for concurrent use; the zero value is not ready, use newLanes.
type lanes struct {
	mu    sync.Mutex
	caps  map[string]int
	lanes map[string]*lane
}

// newLanes returns lanes with the given caps (nil means DefaultLaneCaps).
// Caps below 1 count as 1.
func newLanes(caps map[string]int) *lanes {
	if caps == nil {
		caps = DefaultLaneCaps
	}
	c := make(map[string]int, len(caps))
	for k, v := range caps {
		c[k] = max(1, v)
	}
	return &lanes{caps: c, lanes: map[string]*lane{}}
}

type lane struct {
	max     int
	active  int
	waiters []chan struct{}
}

// acquire takes a slot of the named lane, waiting in FIFO order. onQueued is
// called once, before waiting, with the run's position (1 = next). A
// cancelled wait leaves the queue as if it never joined.
func (l *lanes) acquire(ctx context.Context, name string, cap int, onQueued func(pos int)) (release func(), err error) {
	l.mu.Lock()
	ln := l.lanes[name]
	if ln == nil {
		ln = &lane{max: cap}
		l.lanes[name] = ln
	}
	if ln.active < ln.max && len(ln.waiters) == 0 {
		ln.active++
		l.mu.Unlock()
		return l.releaser(name, ln), nil
	}
	ch := make(chan struct{})
	ln.waiters = append(ln.waiters, ch)
	pos := len(ln.waiters)
	l.mu.Unlock()
	if onQueued != nil {
		onQueued(pos)
	}
	select {
	case <-ch:
		return l.releaser(name, ln), nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, w := range ln.waiters {
			if w == ch {
				ln.waiters = append(ln.waiters[:i], ln.waiters[i+1:]...)
				l.gc(name, ln)
				return nil, context.Cause(ctx)
			}
		}
		// The slot was handed over as the context ended: give it back.
		l.handOff(name, ln)
		return nil, context.Cause(ctx)
	}
}

func (l *lanes) releaser(name string, ln *lane) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.handOff(name, ln)
		})
	}
}

// handOff passes a held slot to the next waiter, or frees it. l.mu is held.
func (l *lanes) handOff(name string, ln *lane) {
	if len(ln.waiters) > 0 {
		next := ln.waiters[0]
		ln.waiters = ln.waiters[1:]
		close(next)
		return
	}
	ln.active--
	l.gc(name, ln)
}

func (l *lanes) gc(name string, ln *lane) {
	if ln.active == 0 && len(ln.waiters) == 0 && strings.HasPrefix(name, sessionLanePrefix) {
		delete(l.lanes, name)
	}
}

func (l *lanes) capOf(name string) int {
	if c, ok := l.caps[name]; ok {
		return c
	}
	return 1
}

// Acquire queues a run on its session lane, then on its global lane, and
// returns the function that frees both. onQueued is told the lane and the
// position whenever the run has to wait in one.
func (l *lanes) Acquire(ctx context.Context, sessionKey, globalLane string, onQueued func(lane string, pos int)) (release func(), err error) {
	sl := resolveSessionLane(sessionKey)
	gl := resolveGlobalLane(globalLane)
	q := func(name string) func(int) {
		if onQueued == nil {
			return nil
		}
		return func(pos int) { onQueued(name, pos) }
	}
	relS, err := l.acquire(ctx, sl, 1, q(sl))
	if err != nil {
		return nil, err
	}
	relG, err := l.acquire(ctx, gl, l.capOf(gl), q(gl))
	if err != nil {
		relS()
		return nil, err
	}
	return func() { relG(); relS() }, nil
}

// Running reports how many runs hold a slot of the named lane.
func (l *lanes) Running(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln := l.lanes[name]; ln != nil {
		return ln.active
	}
	return 0
}
