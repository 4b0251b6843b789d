package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/session"
)

// MirrorID is the stable id of a mirrored item:
// <harness>/<native thread>/<turn>/<item>[/<part>]. The same native item
// always gets the same id, so an engine that re-emits it (a reconnect, a
// retry, a resumed thread) never has it written twice.
func MirrorID(harness, thread, turn, item string, part ...string) string {
	ps := append([]string{harness, thread, turn, item}, part...)
	return strings.Join(ps, "/")
}

// SessionMirror returns an Attempt.Mirror that appends items to sess as
// message entries whose idempotency key (session.Entry.IdemKey) is their
// MirrorID; an id already in the session is not written again
// (session.Session.Append) and reports false.
func SessionMirror(sess session.Session) func(ctx context.Context, it Item) (bool, error) {
	return func(ctx context.Context, it Item) (bool, error) {
		if it.MirrorID == "" {
			return false, fmt.Errorf("mirror a %s message: it has no mirror id", it.Message.Role)
		}
		// The mirror id is the entry's idempotency key: the store writes it
		// once, and a skipped append leaves the leaf where it was.
		e := session.MessageEntry(it.Message)
		e.IdemKey = it.MirrorID
		before := sess.Leaf()
		// What happened is written even when the run was aborted: the
		// result of an aborted call keeps its call paired.
		id, err := sess.Append(context.WithoutCancel(ctx), e)
		if err != nil {
			return false, fmt.Errorf("mirror %s: %w", it.MirrorID, err)
		}
		// Written, the entry is the new leaf; skipped, the leaf did not move.
		return id != before && sess.Leaf() == id, nil
	}
}

// Mirror collects an attempt's items and passes each to the attempt's
// Mirror once, whatever the engine re-emits. Harnesses use one per
// attempt.
type Mirror struct {
	a     *Attempt
	seen  map[string]bool
	items []Item
	// PromptPersisted is set once the user turn was appended.
	PromptPersisted bool
}

// NewMirror returns the mirror of attempt a.
func NewMirror(a *Attempt) *Mirror { return &Mirror{a: a, seen: map[string]bool{}} }

// Add mirrors it unless its id was seen; user reports whether it is the
// attempt's user turn (then PromptPersisted records a real append).
func (m *Mirror) Add(ctx context.Context, it Item, user bool) error {
	if m.seen[it.MirrorID] {
		return nil
	}
	m.seen[it.MirrorID] = true
	m.items = append(m.items, it)
	if m.a.Mirror == nil {
		return nil
	}
	appended, err := m.a.Mirror(ctx, it)
	if user && appended {
		m.PromptPersisted = true
	}
	return err
}

// Items returns the items mirrored so far, in order.
func (m *Mirror) Items() []Item { return append([]Item(nil), m.items...) }

// ErrNoForget is what ForgetEach reports for a binding whose engine has no
// delete (not a Forgetter): its session is kept.
var ErrNoForget = errors.New("the engine cannot delete its sessions: kept")

// ForgetBindings tells the engines of every native session t was ever
// bound to (each binding entry, transfers included) to delete it, where
// the engine can (Forgetter); lookup returns the harness of an id. It is
// for a deleted session: nothing of t is changed.
func ForgetBindings(ctx context.Context, t *session.Transcript, lookup func(id string) (Harness, error)) error {
	var errs []error
	ForgetEach(ctx, t, lookup, func(b Binding, err error) {
		if err != nil && !errors.Is(err, ErrNoForget) {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// ForgetEach is ForgetBindings telling done of each native session, once,
// in the transcript's order: err nil when it is gone (deleted now or
// before), ErrNoForget when its engine cannot delete it, else why not.
func ForgetEach(ctx context.Context, t *session.Transcript, lookup func(id string) (Harness, error), done func(b Binding, err error)) {
	seen := map[Binding]bool{}
	for _, e := range t.Entries {
		b := Binding{Harness: e.Harness, NativeID: e.NativeID}
		if e.Type != session.EntryHarnessBinding || e.NativeID == "" || seen[b] {
			continue
		}
		seen[b] = true
		b.Version, b.Cwd = e.Version, e.Cwd
		h, err := lookup(e.Harness)
		if err != nil {
			done(b, err)
			continue
		}
		f, ok := h.(Forgetter)
		if !ok {
			done(b, ErrNoForget)
			continue
		}
		if err := f.Forget(ctx, b); err != nil {
			done(b, fmt.Errorf("%s session %s: %w", e.Harness, e.NativeID, err))
			continue
		}
		done(b, nil)
	}
}
