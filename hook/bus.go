package hook

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds one hook call when neither the hook's Spec nor the
// bus's Options set a timeout. It is Claude Code's default for a command
// hook.
const DefaultTimeout = 60 * time.Second

// ErrTimeout is reported (wrapped) when a hook did not return within its
// timeout. The run goes on without its answer.
var ErrTimeout = errors.New("hook timed out")

// PanicError is reported when a Go hook panicked. The run goes on without
// its answer.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("hook panicked: %v", e.Value) }

// NoticeKind says what a Notice reports.
type NoticeKind string

// The kinds of notice.
const (
	// NoticeError: a hook returned an error (or a shell hook exited with a
	// code other than 0 and 2).
	NoticeError NoticeKind = "error"
	// NoticePanic: a Go hook panicked; Err is a *PanicError.
	NoticePanic NoticeKind = "panic"
	// NoticeTimeout: a hook ran past its timeout; Err wraps ErrTimeout.
	NoticeTimeout NoticeKind = "timeout"
	// NoticeMessage: a hook has something to tell the user (Claude Code's
	// systemMessage, a stopReason, stderr meant for the user).
	NoticeMessage NoticeKind = "message"
)

// Notice is something a hook did that the user should hear about, but
// that does not stop the run: a failure, or a message for the user.
type Notice struct {
	Point  Point
	Hook   string // the hook's Spec.Name
	Source string // the hook's Spec.Source
	Kind   NoticeKind
	Err    error  // the failure; nil for a NoticeMessage
	Text   string // what to show the user
}

// Spec names and orders a hook.
type Spec struct {
	// Name identifies the hook in notices and listings.
	Name string
	// Priority orders the hooks of one point: higher runs first; equal
	// priorities run in the order they were registered.
	Priority int
	// Timeout bounds one call; 0 means the bus's Options.Timeout.
	Timeout time.Duration
	// Source says where the hook came from (a settings file, "go").
	Source string
	// FailOpen, at before_tool_call, lets the call go ahead when this hook
	// fails (errors, panics, times out). By default a failing guard blocks
	// the call, as OpenClaw does: a check that crashed has not said yes.
	FailOpen bool
}

// Options configure a Bus. The zero value is usable.
type Options struct {
	// Report receives every notice, with the context of the fire call
	// that led to it (a caller routes it to its run, e.g. with
	// Agent.ReportHookError). It may be called from several goroutines at
	// once and must not block. nil logs notices with slog.Default().
	Report func(ctx context.Context, n Notice)
	// Timeout bounds one hook call whose Spec sets none; 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

// Bus holds the hooks of each point and fires them. Registering and firing
// are safe for concurrent use; a hook registered while a point fires takes
// part from the next firing on.
type Bus struct {
	opts    Options
	hooks   [numPoints]atomic.Pointer[[]*entry]
	mu      sync.Mutex // serialises registration
	seq     uint64
	running inflight // hook goroutines, including ones past their timeout
}

// inflight counts running hook goroutines. Unlike a sync.WaitGroup it
// lets goroutines start while someone waits, which a bus shared by
// concurrent runs needs: one run's Wait at its end overlaps another's
// fires.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 {
		close(f.idle)
		f.idle = nil
	}
}

// wait returns a channel closed once nothing runs, or nil if nothing does.
func (f *inflight) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.idle
}

type entry struct {
	point Point
	spec  Spec
	seq   uint64
	fn    any // func(context.Context, In) (Out, error) for the point's In and Out
}

// New returns an empty bus. opts may be nil.
func New(opts *Options) *Bus {
	b := &Bus{}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.Timeout <= 0 {
		b.opts.Timeout = DefaultTimeout
	}
	return b
}

// Derive returns a new bus that holds b's hooks as they are now and b's
// options. Hooks registered on either bus afterwards, or removed from it,
// do not reach the other, and each waits only for the calls it started: a
// run derives its own bus from one shared by many runs and adds its
// run-bound hooks (the command hooks of its session) there.
func (b *Bus) Derive() *Bus {
	d := &Bus{opts: b.opts}
	b.mu.Lock()
	defer b.mu.Unlock()
	d.seq = b.seq
	for i := range b.hooks {
		if l := b.hooks[i].Load(); l != nil {
			c := slices.Clone(*l)
			d.hooks[i].Store(&c)
		}
	}
	return d
}

// Wait blocks until every hook call the bus started has returned, or ctx is
// done. Fire methods already wait for their hooks; Wait is for the hooks
// that ignored their context past a timeout: a run calls it at its end so
// that nothing it started outlives it. On a bus shared by concurrent runs
// it also waits for the other runs' hooks that are running at the time.
func (b *Bus) Wait(ctx context.Context) error {
	done := b.running.wait()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for hooks: %w", context.Cause(ctx))
	}
}

// Len is the number of hooks registered at p.
func (b *Bus) Len(p Point) int {
	i, ok := p.index()
	if !ok {
		return 0
	}
	if l := b.hooks[i].Load(); l != nil {
		return len(*l)
	}
	return 0
}

// Registered lists the specs of the hooks at p, in the order they run.
func (b *Bus) Registered(p Point) []Spec {
	i, ok := p.index()
	if !ok {
		return nil
	}
	l := b.hooks[i].Load()
	if l == nil {
		return nil
	}
	specs := make([]Spec, len(*l))
	for j, e := range *l {
		specs[j] = e.spec
	}
	return specs
}

func (b *Bus) add(p Point, spec Spec, fn any) (remove func()) {
	i, ok := p.index()
	if !ok {
		panic(fmt.Sprintf("hook: unknown point %q", p))
	}
	if spec.Source == "" {
		spec.Source = "go"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e := &entry{point: p, spec: spec, seq: b.seq, fn: fn}
	if spec.Name == "" {
		e.spec.Name = fmt.Sprintf("%s#%d", p, e.seq)
	}
	var list []*entry
	if old := b.hooks[i].Load(); old != nil {
		list = slices.Clone(*old)
	}
	list = append(list, e)
	slices.SortFunc(list, func(x, y *entry) int {
		if c := cmp.Compare(y.spec.Priority, x.spec.Priority); c != 0 {
			return c // higher priority first
		}
		return cmp.Compare(x.seq, y.seq) // then registration order
	})
	b.hooks[i].Store(&list)
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		old := b.hooks[i].Load()
		if old == nil {
			return
		}
		list := slices.DeleteFunc(slices.Clone(*old), func(x *entry) bool { return x == e })
		b.hooks[i].Store(&list)
	}
}

func (b *Bus) entries(p Point) []*entry {
	i, _ := p.index()
	if l := b.hooks[i].Load(); l != nil {
		return *l
	}
	return nil
}

func (b *Bus) report(ctx context.Context, n Notice) {
	if b.opts.Report != nil {
		b.opts.Report(ctx, n)
		return
	}
	slog.Default().Warn("hook", "point", string(n.Point), "hook", n.Hook, "source", n.Source,
		"kind", string(n.Kind), "err", n.Err, "text", n.Text)
}

func (b *Bus) timeout(e *entry) time.Duration {
	if e.spec.Timeout > 0 {
		return e.spec.Timeout
	}
	return b.opts.Timeout
}

type outcome[Out any] struct {
	out Out
	err error
}

// start runs one hook in its own goroutine, so that a hook which ignores
// its context can be abandoned at its timeout instead of stalling the run.
// The returned channel delivers exactly one outcome; a panic becomes a
// *PanicError.
func start[In, Out any](b *Bus, ctx context.Context, e *entry, in In) <-chan outcome[Out] {
	fn := e.fn.(func(context.Context, In) (Out, error))
	done := make(chan outcome[Out], 1)
	b.running.add()
	go func() {
		defer b.running.done()
		var r outcome[Out]
		defer func() {
			if p := recover(); p != nil {
				r = outcome[Out]{err: &PanicError{Value: p, Stack: debug.Stack()}}
			}
			done <- r
		}()
		r.out, r.err = fn(ctx, in)
	}()
	return done
}

// await waits for one started hook within its deadline and reports a
// failure. ok is false when the hook gave no usable answer: an answer that
// comes only once the hook's time is up counts as a timeout.
func await[Out any](b *Bus, ctx, hctx context.Context, e *entry, done <-chan outcome[Out]) (out Out, ok bool) {
	var r outcome[Out]
	select {
	case r = <-done:
	case <-hctx.Done():
	}
	if hctx.Err() != nil {
		if ctx.Err() == nil {
			b.fail(ctx, e, fmt.Errorf("%w after %v", ErrTimeout, b.timeout(e)))
		}
		return out, false
	}
	if r.err != nil {
		b.fail(ctx, e, r.err)
		return out, false
	}
	return r.out, true
}

func (b *Bus) fail(ctx context.Context, e *entry, err error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return // the run is being cancelled: not the hook's fault
	}
	n := Notice{Point: e.point, Hook: e.spec.Name, Source: e.spec.Source, Kind: NoticeError, Err: err}
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		n.Kind = NoticePanic
	case errors.Is(err, ErrTimeout):
		n.Kind = NoticeTimeout
	}
	n.Text = fmt.Sprintf("hook %s at %s failed: %v; the run goes on without it", e.spec.Name, e.point, err)
	b.report(ctx, n)
}

// callOne runs one hook of a modifying point and waits for it.
func callOne[In, Out any](b *Bus, ctx context.Context, e *entry, in In) (Out, bool) {
	hctx, cancel := context.WithTimeout(ctx, b.timeout(e))
	defer cancel()
	return await(b, ctx, hctx, e, start[In, Out](b, hctx, e, in))
}

// runModifying calls the hooks of p in priority order, each with *in as it
// is then (merge may rewrite it for the hooks after); merge folds each
// answer in and says whether to stop.
func runModifying[In, Out any](b *Bus, ctx context.Context, p Point, in *In, merge func(e *entry, out Out, ok bool) (stop bool)) {
	for _, e := range b.entries(p) {
		if ctx.Err() != nil {
			return
		}
		out, ok := callOne[In, Out](b, ctx, e, *in)
		if merge(e, out, ok) {
			return
		}
	}
}

// runVoid calls the hooks of p concurrently and waits for each within its
// timeout.
func runVoid[In any](b *Bus, ctx context.Context, p Point, in In) {
	list := b.entries(p)
	switch len(list) {
	case 0:
		return
	case 1:
		callOne[In, struct{}](b, ctx, list[0], in)
		return
	}
	type pending struct {
		hctx   context.Context
		cancel context.CancelFunc
		done   <-chan outcome[struct{}]
	}
	ps := make([]pending, len(list))
	for i, e := range list {
		hctx, cancel := context.WithTimeout(ctx, b.timeout(e))
		ps[i] = pending{hctx, cancel, start[In, struct{}](b, hctx, e, in)}
	}
	for i, e := range list {
		await(b, ctx, ps[i].hctx, e, ps[i].done)
		ps[i].cancel()
	}
}

// voidFunc adapts an observer to the internal hook shape.
func voidFunc[In any](fn func(context.Context, In) error) func(context.Context, In) (struct{}, error) {
	return func(ctx context.Context, in In) (struct{}, error) { return struct{}{}, fn(ctx, in) }
}
