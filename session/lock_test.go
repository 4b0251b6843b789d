package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestLockSameProcess(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	id, path := writeSession(t, st, 1)
	s, err := st.Open(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Open(ctx, id, nil)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second open in one process: %v", err)
	}
	if !strings.Contains(err.Error(), "another run in this process (pid "+strconv.Itoa(os.Getpid())+")") {
		t.Errorf("message %q should say the holder is this process", err)
	}
	if _, err := st.Lock(ctx, id, nil); !errors.Is(err, ErrLocked) {
		t.Errorf("Lock while open: %v", err)
	}
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Errorf("lock file missing while held: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after release: %v", err)
	}
	l, err := st.Lock(ctx, id, nil)
	if err != nil {
		t.Fatalf("lock after close: %v", err)
	}
	if err := errors.Join(l.Release(), l.Release()); err != nil {
		t.Errorf("double release: %v", err)
	}
}

func TestLockWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		holder, err := AcquireLock(ctx, path, "s", nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := make(chan error)
		go func() {
			l, err := AcquireLock(ctx, path, "s", &LockOptions{Wait: true})
			if err == nil {
				l.Release()
			}
			got <- err
		}()
		time.Sleep(3 * time.Second) // fake time: the waiter retries meanwhile
		synctest.Wait()
		holder.Release()
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v", err)
		}
		if waited := time.Since(start); waited < 3*time.Second || waited > 4*time.Second {
			t.Errorf("waiter got the lock after %v; backoff should cap retries at 1 s apart", waited)
		}
	})
}

func TestLockWaitTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		holder, err := AcquireLock(ctx, path, "s", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Release()
		start := time.Now()
		_, err = AcquireLock(ctx, path, "s", &LockOptions{Wait: true})
		var le *LockedError
		if !errors.As(err, &le) || le.Waited != DefaultLockTimeout || time.Since(start) != DefaultLockTimeout {
			t.Fatalf("after %v: %v (waited %v)", time.Since(start), err, le.Waited)
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(time.Second); cancel() }()
		if _, err := AcquireLock(cctx, path, "s", &LockOptions{Wait: true}); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrLocked) {
			t.Errorf("cancelled wait: %v", err)
		}
	})
}

// fakeClock is a Clock whose Sleep returns at once and advances Now.
type fakeClock struct {
	now    time.Time
	delays []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.delays = append(c.delays, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) AfterFunc(time.Duration, func()) func() bool {
	panic("lock waits do not use AfterFunc")
}

func TestLockBackoffWithInjectedClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	holder, err := AcquireLock(context.Background(), path, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	clk := &fakeClock{now: time.Unix(0, 0)}
	_, err = AcquireLock(context.Background(), path, "s", &LockOptions{Wait: true, Timeout: 2 * time.Second, Clock: clk})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("err = %v", err)
	}
	want := []time.Duration{50, 100, 150, 200, 250, 300, 350, 400, 200}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if len(clk.delays) != len(want) {
		t.Fatalf("delays %v, want %v", clk.delays, want)
	}
	for i := range want {
		if clk.delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", clk.delays, want)
		}
	}
	if LockBackoff(100) != time.Second {
		t.Errorf("backoff is not capped at 1 s: %v", LockBackoff(100))
	}
}

// Taking the lock of one session does not wait for another's file system
// calls: a server starting many runs would otherwise queue them all behind
// the slowest open and flock.
func TestLockOtherSessionNotSerialised(t *testing.T) {
	dir := t.TempDir()
	slow, fast := filepath.Join(dir, "slow.jsonl"), filepath.Join(dir, "fast.jsonl")
	release := make(chan struct{})
	entered := make(chan struct{})
	lockFileHook = func(p string) {
		if p == slow+".lock" {
			close(entered)
			<-release
		}
	}
	defer func() { lockFileHook = nil }()
	done := make(chan error, 1)
	go func() {
		l, err := AcquireLock(context.Background(), slow, "slow", nil)
		if err == nil {
			err = l.Release()
		}
		done <- err
	}()
	<-entered
	got := make(chan error, 1)
	go func() {
		l, err := AcquireLock(context.Background(), fast, "fast", nil)
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		<-done
		t.Fatal("the lock of another session waited for the slow one's file system calls")
	}
	// The same session meanwhile is refused as held, not let in twice.
	if _, err := AcquireLock(context.Background(), slow, "slow", nil); err == nil {
		t.Fatal("a second acquisition of a lock being taken succeeded")
	} else {
		var le *LockedError
		if !errors.As(err, &le) || le.PID != os.Getpid() {
			t.Fatalf("second acquisition: %v, want a LockedError naming this process", err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A lock being released in this process is waited for, not reported as
// held: a run's next step (the chat's /compact after a reply) takes the
// lock its last step is letting go of.
func TestLockWhileReleasingWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	l, err := AcquireLock(context.Background(), path, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	inRelease, proceed := make(chan struct{}), make(chan struct{})
	lockReleaseHook = func(string) { close(inRelease); <-proceed }
	defer func() { lockReleaseHook = nil }()
	released := make(chan error, 1)
	go func() { released <- l.Release() }()
	<-inRelease
	got := make(chan error, 1)
	go func() {
		l2, err := AcquireLock(context.Background(), path, "s", nil)
		if err == nil {
			err = l2.Release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the acquisition did not wait for the release: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	lockReleaseHook = nil
	close(proceed)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("after the release: %v", err)
	}
}
