package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentloop/agentloop/clock"
)

// ErrLocked is matched (errors.Is) by every *LockedError.
var ErrLocked = errors.New("session is locked")

// LockedError says a session is held by another run. PID, Host and Since
// come from the lock file and are only informative; they are zero when the
// holder had not written them yet.
type LockedError struct {
	Session string
	PID     int
	Host    string
	Since   time.Time
	// Waited is how long the caller waited before giving up (0: no wait).
	Waited time.Duration
}

func (e *LockedError) Error() string {
	var who string
	switch {
	case e.PID == os.Getpid() && e.Host == hostname():
		who = fmt.Sprintf("another run in this process (pid %d)", e.PID)
	case e.PID != 0:
		who = fmt.Sprintf("pid %d", e.PID)
		if e.Host != "" && e.Host != hostname() {
			who += " on " + e.Host
		}
	default:
		who = "another process"
	}
	msg := fmt.Sprintf("session %s is in use by %s", e.Session, who)
	if !e.Since.IsZero() {
		msg += " since " + e.Since.Local().Format(time.DateTime)
	}
	if e.Waited > 0 {
		msg += fmt.Sprintf(" (waited %s)", e.Waited.Round(time.Millisecond))
	}
	return msg + "; wait for that run to finish, or fork the session to continue it elsewhere"
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// DefaultLockTimeout is how long a waiting lock acquisition tries.
const DefaultLockTimeout = 10 * time.Second

// LockOptions say how to acquire a session lock. The zero value fails fast.
type LockOptions struct {
	// Wait retries with backoff (50 ms more per attempt, at most 1 s) until
	// Timeout instead of failing at once.
	Wait bool
	// Timeout bounds a wait; 0 means DefaultLockTimeout.
	Timeout time.Duration
	// Clock is the time source of the waits; nil means clock.Real.
	Clock clock.Clock
}

// LockBackoff returns the pause before retry attempt n (1-based).
func LockBackoff(attempt int) time.Duration {
	return min(time.Second, time.Duration(attempt)*50*time.Millisecond)
}

// lockInfo is the content of a lock file, read only for messages.
type lockInfo struct {
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	StartedAt string `json:"startedAt"`
}

// FileLock is a held session write lock: an exclusive flock on
// "<session file>.lock". The kernel frees it when the holder dies, so a
// crashed run never leaves a session locked. Within one process a lock
// belongs to the run that took it: another acquisition of the same path is
// refused like one from another process.
type FileLock struct {
	path    string
	session string
	f       *os.File
	once    sync.Once
	err     error
}

var (
	heldMu sync.Mutex
	held   = map[string]*heldLock{}
)

// heldLock is a path's entry in the process's table: reserved by an
// acquisition, held, or being released (released is then closed when the
// file is gone, so that an acquisition in this process waits for it
// instead of being refused by a lock that is going away).
type heldLock struct {
	info     lockInfo
	released chan struct{}
}

// AcquireLock takes the write lock of the session file sessionPath, named
// id in messages. It fails with a *LockedError when another run holds it,
// after waiting if opts ask for it.
func AcquireLock(ctx context.Context, sessionPath, id string, opts *LockOptions) (*FileLock, error) {
	var o LockOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultLockTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	abs, err := filepath.Abs(sessionPath)
	if err != nil {
		return nil, fmt.Errorf("lock session %s: %w", id, err)
	}
	lockPath := abs + ".lock"
	start := o.Clock.Now()
	for attempt := 1; ; attempt++ {
		l, lerr, err := tryLock(lockPath, id)
		if err != nil {
			return nil, err
		}
		if l != nil {
			return l, nil
		}
		waited := o.Clock.Now().Sub(start)
		if !o.Wait || waited >= o.Timeout {
			if o.Wait {
				lerr.Waited = waited
			}
			return nil, lerr
		}
		if err := o.Clock.Sleep(ctx, min(LockBackoff(attempt), o.Timeout-waited)); err != nil {
			return nil, fmt.Errorf("wait for the lock of session %s: %w (%w)", id, ctx.Err(), lerr)
		}
	}
}

// tryLock makes one attempt. It returns the lock, or a *LockedError when
// the lock is held, or an error when locking itself failed.
//
// The process-wide table only reserves the path: the file system calls
// run outside its mutex, so that runs starting on other sessions do not
// queue behind this one's open, flock and write (a server starts hundreds).
// Another acquisition of the path in this process meanwhile finds the
// reservation and is refused as if the lock were held.
func tryLock(lockPath, id string) (*FileLock, *LockedError, error) {
	info := lockInfo{PID: os.Getpid(), Host: hostname(), StartedAt: formatTime(time.Now())}
	heldMu.Lock()
	for {
		cur, ok := held[lockPath]
		if !ok {
			break
		}
		if cur.released == nil {
			heldMu.Unlock()
			return nil, lockedError(id, cur.info), nil
		}
		heldMu.Unlock()
		<-cur.released
		heldMu.Lock()
	}
	held[lockPath] = &heldLock{info: info}
	heldMu.Unlock()
	l, lerr, err := lockFile(lockPath, id, info)
	if l == nil {
		heldMu.Lock()
		delete(held, lockPath)
		heldMu.Unlock()
	}
	return l, lerr, err
}

// lockFileHook and lockReleaseHook, when set by a test, run before
// tryLock's and Release's file system calls.
var lockFileHook, lockReleaseHook func(lockPath string)

// lockFile takes the file lock at lockPath, whose path tryLock reserved.
func lockFile(lockPath, id string, info lockInfo) (*FileLock, *LockedError, error) {
	if lockFileHook != nil {
		lockFileHook(lockPath)
	}
	for range 5 {
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("lock session %s: %w", id, err)
		}
		ok, err := flockExclusive(f)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("lock session %s: %w", id, err)
		}
		if !ok {
			info := readLockInfo(f)
			f.Close()
			return nil, lockedError(id, info), nil
		}
		// A releasing holder unlinks the file before unlocking; if we
		// locked an unlinked file, another run may lock a new one at the
		// same path, so start again.
		if !samePath(f, lockPath) {
			f.Close()
			continue
		}
		b, _ := json.Marshal(info)
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt(append(b, '\n'), 0)
		}
		return &FileLock{path: lockPath, session: id, f: f}, nil, nil
	}
	return nil, nil, fmt.Errorf("lock session %s: the lock file %s keeps being replaced", id, lockPath)
}

func lockedError(id string, info lockInfo) *LockedError {
	return &LockedError{Session: id, PID: info.PID, Host: info.Host, Since: parseTime(info.StartedAt)}
}

func readLockInfo(f *os.File) lockInfo {
	var info lockInfo
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	_ = json.Unmarshal(b[:n], &info)
	return info
}

func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// Path returns the lock file's path.
func (l *FileLock) Path() string { return l.path }

// Release frees the lock and removes the lock file. It is safe to call
// more than once.
func (l *FileLock) Release() error {
	l.once.Do(func() {
		heldMu.Lock()
		h := held[l.path]
		if h != nil {
			h.released = make(chan struct{})
		}
		heldMu.Unlock()
		if lockReleaseHook != nil {
			lockReleaseHook(l.path)
		}
		// Unlink while still holding the lock, so nobody can lock this
		// file after we let go of it (see lockFile). An acquisition in
		// this process meanwhile waits for h.released.
		if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.err = fmt.Errorf("release the lock of session %s: %w", l.session, err)
		}
		if err := l.f.Close(); err != nil && l.err == nil {
			l.err = fmt.Errorf("release the lock of session %s: %w", l.session, err)
		}
		heldMu.Lock()
		delete(held, l.path)
		heldMu.Unlock()
		if h != nil {
			close(h.released)
		}
	})
	return l.err
}

var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})
