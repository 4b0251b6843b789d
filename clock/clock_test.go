package clock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/clock"
)

func TestRealSleepAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.Or(nil)
		start := c.Now()
		if err := c.Sleep(t.Context(), time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := c.Now().Sub(start); got != time.Minute {
			t.Fatalf("slept %v, want 1m", got)
		}
		cause := errors.New("stopped by the test")
		ctx, cancel := context.WithCancelCause(t.Context())
		c.AfterFunc(time.Second, func() { cancel(cause) })
		if err := c.Sleep(ctx, time.Hour); !errors.Is(err, cause) {
			t.Fatalf("Sleep = %v, want the context's cause", err)
		}
		if got := c.Now().Sub(start); got != time.Minute+time.Second {
			t.Fatalf("woke at %v, want 1m1s", got)
		}
	})
}

func TestAtAndUnixMilli(t *testing.T) {
	fixed := time.UnixMilli(1_700_000_000_123)
	c := clock.At(func() time.Time { return fixed })
	if !c.Now().Equal(fixed) {
		t.Fatalf("Now = %v", c.Now())
	}
	if got := clock.UnixMilli(c)(); got != 1_700_000_000_123 {
		t.Fatalf("UnixMilli = %d", got)
	}
	if stop := c.AfterFunc(time.Hour, func() { t.Error("fired") }); !stop() {
		t.Fatal("stop did not cancel the timer")
	}
}
