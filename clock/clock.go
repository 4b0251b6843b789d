package clock

import (
	"context"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends, returning ctx's cause then.
	Sleep(ctx context.Context, d time.Duration) error
	// AfterFunc calls f after d in its own goroutine; stop cancels it and
	// reports whether it did so before f was called.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real is the Clock of the time package.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Sleep waits d on a timer, or until ctx ends.
func (Real) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Or returns c, or Real when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// UnixMilli returns a message stamper that reads c.
func UnixMilli(c Clock) func() int64 {
	c = Or(c)
	return func() int64 { return c.Now().UnixMilli() }
}

// At is a Clock whose Now is now and which waits on real timers: for code
// whose tests fix the time it reads but not the time it waits.
func At(now func() time.Time) Clock { return at(now) }

type at func() time.Time

func (f at) Now() time.Time { return f() }

func (at) Sleep(ctx context.Context, d time.Duration) error { return Real{}.Sleep(ctx, d) }

func (at) AfterFunc(d time.Duration, fn func()) func() bool { return Real{}.AfterFunc(d, fn) }
